package rmqd.it;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.ProducerBuilder;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Produce through the proxy, then consume what was produced, in one JVM (a gRPC client takes seconds to
 * start on a busy 2-core machine).
 *
 * Producer (--producer normal|fifo|delay|tx|none): --count messages, tag --tag, keys "<keys>-i", body
 * Bodies.make(--body-prefix, i, --size); fifo spreads them over --groups message groups ("g0".."gN");
 * delay sets the delivery timestamp --delay-ms ahead and, with --recall K, recalls the first K by their
 * recall handles; tx gives message i the local outcome --tx (commit,rollback,unknown cycled) and answers
 * the broker's check (relayed by the proxy) with --check.
 *
 * Consumer (--consumer simple|push|none) in --group on --topic with tag expression --expr:
 *   simple: receive(16, --invisible-ms); the first --skip-ack deliveries of each message are left unacked
 *     (the broker redelivers them after the invisible time); with --change-ms X the first delivery gets
 *     changeInvisibleDuration(X) and, with --ack-after-change, is acked at once (with the renewed handle).
 *   push: the listener answers FAILURE to the first --fail-first deliveries of each message.
 * It stops once --expect messages (default: those not rolled back or recalled) were acked / consumed
 * with SUCCESS, or, with --expect-attempts N, once every expected message was delivered N times; then it
 * goes on receiving for --linger ms to catch deliveries that must not happen. Fails after --timeout ms.
 */
final class GrpcRoundtrip implements Scenario {
    @Override
    public void run(Flags f, Map<String, Object> out) throws Exception {
        String endpoints = f.required("endpoints");
        String topic = f.required("topic");
        String producerKind = f.choice("producer", "normal", "normal", "fifo", "delay", "tx", "none");
        int count = f.integer("count", 1);
        String tag = f.str("tag", "a");
        String keys = f.str("keys", "k");
        String bodyPrefix = f.str("body-prefix", "rmqd-grpc");
        int size = f.integer("size", 64);
        int groups = f.integer("groups", 2);
        long delayMs = f.longValue("delay-ms", 3000);
        int recall = f.integer("recall", 0);
        String[] tx = f.str("tx", "commit").split(",");
        String check = f.choice("check", "commit", "commit", "rollback");
        String consumerKind = f.choice("consumer", "simple", "simple", "push", "none");
        String group = f.str("group", "rmqd-grpc-consumer");
        String expr = f.str("expr", "*");
        long invisibleMs = f.longValue("invisible-ms", 15000);
        int skipAck = f.integer("skip-ack", 0);
        long changeMs = f.longValue("change-ms", 0);
        boolean ackAfterChange = f.bool("ack-after-change");
        int failFirst = f.integer("fail-first", 0);
        int expectFlag = f.integer("expect", -1);
        int expectAttempts = f.integer("expect-attempts", 0);
        long linger = f.longValue("linger", 0);
        long timeout = f.longValue("timeout", 60000);
        long awaitMs = f.longValue("await-ms", 5000);
        f.checkAllUsed();

        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoints).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();

        List<Map<String, Object>> sent = new ArrayList<>();
        out.put("sent", sent);
        AtomicInteger checks = new AtomicInteger();
        Map<String, String> localStates = new ConcurrentHashMap<>();
        out.put("checks", 0);
        Set<String> skipIds = ConcurrentHashMap.newKeySet();
        if (!producerKind.equals("none")) {
            ProducerBuilder pb = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic);
            if (producerKind.equals("tx")) {
                // As an application would: look the local outcome up; only unknown ones get --check.
                pb.setTransactionChecker(mv -> {
                    checks.incrementAndGet();
                    String local = localStates.getOrDefault(mv.getMessageId().toString(), "unknown");
                    String answer = local.equals("unknown") ? check : local;
                    return answer.equals("commit") ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
                });
            }
            Producer producer = pb.build();
            long deliverAt = System.currentTimeMillis() + delayMs;
            for (int i = 0; i < count; i++) {
                byte[] body = Bodies.make(bodyPrefix, i, size);
                MessageBuilder mb = provider.newMessageBuilder().setTopic(topic).setTag(tag).setKeys(keys + "-" + i)
                    .setBody(body).addProperty("idx", String.valueOf(i));
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("index", i);
                s.put("tags", tag);
                s.put("keys", keys + "-" + i);
                s.put("bodySha256", Bodies.sha256(body));
                if (producerKind.equals("fifo")) {
                    mb.setMessageGroup("g" + (i % groups));
                    s.put("messageGroup", "g" + (i % groups));
                } else if (producerKind.equals("delay")) {
                    mb.setDeliveryTimestamp(deliverAt);
                    s.put("deliveryTimestamp", deliverAt);
                }
                s.put("sentAt", System.currentTimeMillis());
                SendReceipt r;
                if (producerKind.equals("tx")) {
                    Transaction t = producer.beginTransaction();
                    r = producer.send(mb.build(), t);
                    String outcome = tx[i % tx.length];
                    s.put("localState", outcome);
                    localStates.put(r.getMessageId().toString(), outcome);
                    if (outcome.equals("commit")) {
                        t.commit();
                    } else if (outcome.equals("rollback")) {
                        t.rollback();
                    }
                    if (outcome.equals("rollback") || outcome.equals("unknown") && !check.equals("commit")) {
                        skipIds.add(r.getMessageId().toString());
                    }
                } else {
                    r = producer.send(mb.build());
                }
                s.put("msgId", r.getMessageId().toString());
                s.put("recallHandle", r.getRecallHandle());
                sent.add(s);
            }
            for (int i = 0; i < recall && i < sent.size(); i++) {
                Map<String, Object> s = sent.get(i);
                producer.recallMessage(topic, (String) s.get("recallHandle"));
                s.put("recalled", true);
                skipIds.add((String) s.get("msgId"));
            }
            out.put("checks", checks.get());
            if (!producerKind.equals("tx")) {
                producer.close();
            }
        }

        if (consumerKind.equals("none")) {
            return;
        }
        int expect = expectFlag >= 0 ? expectFlag : sent.size() - skipIds.size();
        List<Map<String, Object>> received = Collections.synchronizedList(new ArrayList<>());
        out.put("received", received);
        Set<String> done = ConcurrentHashMap.newKeySet();
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        out.put("errors", errors);
        Map<String, FilterExpression> sub = Collections.singletonMap(topic, new FilterExpression(expr, FilterExpressionType.TAG));
        long end = System.currentTimeMillis() + timeout;
        java.util.function.BooleanSupplier finished = () -> {
            if (expectAttempts > 0) {
                if (seen.size() < expect) {
                    return false;
                }
                for (int n : seen.values()) {
                    if (n < expectAttempts) {
                        return false;
                    }
                }
                return true;
            }
            return done.size() >= expect;
        };

        if (consumerKind.equals("simple")) {
            SimpleConsumer c = provider.newSimpleConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(group)
                .setAwaitDuration(Duration.ofMillis(awaitMs)).setSubscriptionExpressions(sub).build();
            long lingerEnd = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(end, lingerEnd)) {
                if (lingerEnd == Long.MAX_VALUE && finished.getAsBoolean()) {
                    lingerEnd = System.currentTimeMillis() + linger;
                    continue;
                }
                List<MessageView> got;
                try {
                    // --invisible-ms while some message may still be left unacked; once every expected
                    // message was seen --skip-ack times the rest are acked, and get a long invisible
                    // time so a stalled machine cannot expire them between receive and ack.
                    boolean skipsLeft = seen.size() < expect || seen.values().stream().anyMatch(n -> n < skipAck);
                    got = c.receive(16, Duration.ofMillis(skipsLeft || changeMs > 0 ? invisibleMs : Math.max(invisibleMs, 30000)));
                } catch (Exception e) {
                    if (!describeMessageNotFound(e)) {
                        errors.add("receive: " + GrpcMain.describe(e));
                        Thread.sleep(200);
                    }
                    continue;
                }
                for (MessageView mv : got) {
                    String id = mv.getMessageId().toString();
                    int n = seen.merge(id, 1, Integer::sum);
                    Map<String, Object> v = view(mv);
                    String action;
                    try {
                        if (n <= skipAck) {
                            action = "skip";
                        } else if (changeMs > 0 && n == 1) {
                            c.changeInvisibleDuration(mv, Duration.ofMillis(changeMs));
                            action = "change";
                            if (ackAfterChange) {
                                c.ack(mv);
                                action = "change+ack";
                                done.add(id);
                            }
                        } else {
                            c.ack(mv);
                            action = "ack";
                            done.add(id);
                        }
                    } catch (Exception e) {
                        action = "error";
                        errors.add("ack/change " + id + ": " + GrpcMain.describe(e));
                    }
                    v.put("action", action);
                    received.add(v);
                }
            }
        } else {
            Map<String, Integer> attempts = new ConcurrentHashMap<>();
            PushConsumer c = provider.newPushConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(group)
                .setSubscriptionExpressions(sub).setMessageListener(mv -> {
                    String id = mv.getMessageId().toString();
                    int n = attempts.merge(id, 1, Integer::sum);
                    seen.merge(id, 1, Integer::sum);
                    Map<String, Object> v = view(mv);
                    ConsumeResult r = n <= failFirst ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
                    v.put("action", r.name());
                    received.add(v);
                    if (r == ConsumeResult.SUCCESS) {
                        done.add(id);
                    }
                    return r;
                }).build();
            // Consumers are not closed: close() waits out the open long poll, and the JVM halts when done.
            while (System.currentTimeMillis() < end && !finished.getAsBoolean()) {
                Thread.sleep(100);
            }
            if (finished.getAsBoolean()) {
                Thread.sleep(linger);
            }
        }
        out.put("acked", done.size());
        out.put("checks", checks.get());
        if (!finished.getAsBoolean()) {
            throw new ScenarioFailure("timeout after " + timeout + " ms: " + done.size() + " of " + expect
                + " messages acked/consumed, " + seen.size() + " distinct delivered");
        }
    }

    /** A receive that found nothing within the await duration throws; that is an empty poll, not an error. */
    private static boolean describeMessageNotFound(Exception e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c.getClass().getSimpleName().equals("NotFoundException")
                || String.valueOf(c.getMessage()).contains("MESSAGE_NOT_FOUND")) {
                return true;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return false;
    }

    private static Map<String, Object> view(MessageView mv) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("msgId", mv.getMessageId().toString());
        v.put("topic", mv.getTopic());
        v.put("tags", mv.getTag().orElse(""));
        v.put("keys", String.join(" ", mv.getKeys()));
        v.put("messageGroup", mv.getMessageGroup().orElse(""));
        v.put("deliveryTimestamp", mv.getDeliveryTimestamp().orElse(0L));
        v.put("deliveryAttempt", mv.getDeliveryAttempt());
        v.put("bornTimestamp", mv.getBornTimestamp());
        v.put("receivedAt", System.currentTimeMillis());
        ByteBuffer b = mv.getBody();
        byte[] body = new byte[b.remaining()];
        b.duplicate().get(body);
        v.put("bodySha256", Bodies.sha256(body));
        v.put("bodySize", body.length);
        v.put("properties", new HashMap<>(mv.getProperties()));
        return v;
    }
}
