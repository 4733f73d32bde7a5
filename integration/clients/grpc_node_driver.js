'use strict';
// Drives the RocketMQ 5.x gRPC Node.js client (npm rocketmq-client-nodejs, from apache/rocketmq-clients) through
// rocketmq-proxy: sends --count messages, then receives them with a SimpleConsumer and acks each. Prints exactly
// one JSON line on stdout: {"ok": bool, "sent": [...], "received": [...], "error": "..."}; logs go to stderr.
//
//   node grpc_node_driver.js --endpoints 127.0.0.1:8081 --topic T --group G --count N --tag a --timeout 60
//
// NODE_PATH must point at the node_modules holding rocketmq-client-nodejs (integration/.clients/node).

const crypto = require('crypto');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

function parse(argv) {
  const a = { group: 'rmqd-it-grpc-node', count: 1, tag: 'a', timeout: 60, prefix: 'rmqd-grpc-node', invisible: 15000 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[++i];
    if (v === undefined) throw new Error('missing value for --' + k);
    a[k] = [ 'count', 'timeout', 'invisible' ].includes(k) ? Number(v) : v;
  }
  if (!a.endpoints || !a.topic) throw new Error('--endpoints and --topic are required');
  return a;
}

const sha256 = b => crypto.createHash('sha256').update(b).digest('hex');
const sleep = ms => new Promise(r => setTimeout(r, ms));
const out = { ok: false, sent: [], received: [], errors: [] };

async function main(a) {
  const deadline = Date.now() + a.timeout * 1000;
  const producer = new Producer({ endpoints: a.endpoints, namespace: '', sslEnabled: false, topic: a.topic });
  await producer.startup();
  for (let i = 0; i < a.count; i++) {
    const body = Buffer.from(`${a.prefix}-${i}-payload`);
    const r = await producer.send({ topic: a.topic, tag: a.tag, keys: [ `k-${i}` ], body });
    out.sent.push({ index: i, msgId: r.messageId, tags: a.tag, keys: `k-${i}`, bodySha256: sha256(body) });
  }
  const consumer = new SimpleConsumer({ endpoints: a.endpoints, namespace: '', sslEnabled: false,
    consumerGroup: a.group, subscriptions: new Map().set(a.topic, '*'), awaitDuration: 5000 });
  await consumer.startup();
  const acked = new Set();
  while (acked.size < a.count && Date.now() < deadline) {
    let got = [];
    try {
      got = await consumer.receive(16, a.invisible);
    } catch (e) {
      if (!/MESSAGE_NOT_FOUND|not found/i.test(String(e && e.message))) {
        out.errors.push('receive: ' + e);
        await sleep(200);
      }
      continue;
    }
    for (const m of got) {
      const v = { msgId: m.messageId, topic: m.topic, tags: m.tag || '', keys: (m.keys || []).join(' '),
        bodySha256: sha256(m.body), deliveryAttempt: m.deliveryAttempt || 0, action: 'ack' };
      try {
        await consumer.ack(m);
        acked.add(m.messageId);
      } catch (e) {
        v.action = 'error';
        out.errors.push('ack ' + m.messageId + ': ' + e);
      }
      out.received.push(v);
    }
  }
  if (acked.size < a.count) throw new Error(`timeout: ${acked.size} of ${a.count} messages acked`);
  out.ok = true;
}

let args;
try {
  args = parse(process.argv.slice(2));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: 'usage: ' + e.message }));
  process.exit(2);
}
// The client keeps timers and streams open: print the result and exit instead of shutting them down.
main(args).catch(e => { out.error = String(e && e.stack || e); })
  .finally(() => { console.log(JSON.stringify(out)); process.exit(out.ok ? 0 : 1); });
