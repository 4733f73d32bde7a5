'use strict';
// Drives the pure-JavaScript ali-ons client (npm) for the integration tests. Prints exactly one JSON line on
// stdout: {"ok": bool, "sent": [...], "received": [...], "error": "..."}; client logs go to stderr.
//
//   node ons_driver.js produce --namesrv A --topic T --group G --count N --tags a,b
//   node ons_driver.js consume --namesrv A --topic T --group G --count N --expr 'a' [--sql] --timeout S
//
// NODE_PATH must point at the node_modules holding ali-ons (the Makefile's integration/.clients/node).

const { Producer, Consumer, Message } = require('ali-ons');
// ali-ons asserts an HTTP client, used only to look the name server up from onsAddr; nameSrv is given.
const httpclient = { async request() { throw new Error('no HTTP lookups: nameSrv is set'); } };

function parse(argv) {
  const a = { scenario: argv[0], group: 'rmqd-it-ons', count: 1, tags: 'a,b', expr: '*', timeout: 60, linger: 0,
    prefix: 'rmqd-it-ons', sql: false };
  for (let i = 1; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    if (k === 'sql') { a.sql = true; continue; }
    const v = argv[++i];
    if (v === undefined) throw new Error('missing value for --' + k);
    a[k] = [ 'count', 'timeout', 'linger' ].includes(k) ? Number(v) : v;
  }
  if (!a.namesrv || !a.topic) throw new Error('--namesrv and --topic are required');
  return a;
}

const quiet = { info() {}, warn() {}, debug() {}, error(...x) { console.error(...x); } };
const common = a => ({ httpclient, nameSrv: a.namesrv, accessKeyId: 'rmqd', accessKeySecret: 'rmqd', logger: quiet });
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function produce(a) {
  const p = new Producer(Object.assign(common(a), { producerGroup: a.group }));
  await p.ready();
  const tags = a.tags.split(',');
  const sent = [];
  try {
    for (let i = 0; i < a.count; i++) {
      const tag = tags[i % tags.length];
      const body = `${a.prefix}-${i}-payload`;
      const m = new Message(a.topic, tag, body);
      m.keys = [ `k-${i}` ];
      m.properties.color = 'red';
      const r = await p.send(m);
      sent.push({ i, status: r.sendStatus, msgId: r.msgId, queueId: r.messageQueue.queueId,
        offset: Number(r.queueOffset), tags: tag, body });
    }
  } finally {
    await p.close();
  }
  return { ok: sent.every(s => s.status === 'SEND_OK'), sent };
}

async function consume(a) {
  const c = new Consumer(Object.assign(common(a), { consumerGroup: a.group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET' }));
  const got = [];
  let done;
  const finished = new Promise(r => { done = r; });
  const expr = a.sql ? { expressionType: 'SQL92', subString: a.expr } : a.expr;
  c.subscribe(a.topic, expr, async msg => {
    got.push({ msgId: msg.msgId, topic: msg.topic, tags: msg.tags, keys: msg.keys, queueId: msg.queueId,
      queueOffset: Number(msg.queueOffset), body: msg.body.toString(), color: msg.properties.color || '',
      reconsumeTimes: msg.reconsumeTimes });
    if (got.length >= a.count) done();
  });
  c.on('error', err => console.error('consumer error', err));
  await c.ready();
  await Promise.race([ finished, sleep(a.timeout * 1000) ]);
  await sleep(a.linger * 1000);
  await c.close();
  return { ok: got.length >= a.count, received: got };
}

(async () => {
  let out;
  try {
    const a = parse(process.argv.slice(2));
    out = a.scenario === 'produce' ? await produce(a) : await consume(a);
  } catch (e) {
    out = { ok: false, error: String(e && e.stack || e) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(out.ok ? 0 : 1);
})();
