package rmqd.it;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;

/**
 * produce: sends --count messages with deterministic bodies and reports each one.
 *
 * Flags: --namesrv, --topic, [--group], [--mode sync|async|oneway|batch], [--count 1], [--size 64],
 * [--tags a,b (cycled; "" = none)], [--keys prefix (key of message i = prefix-i; "" = none)],
 * [--props k=v,k2=v2 (user properties on every message)], [--props-sep ,], [--batch 10 (messages per batch)],
 * [--body-prefix rmqd-it], [--send-timeout 10000 (the client default, 3000, is too short on a loaded 2-core machine)], [--retries 2], [--delay-level 0], [--timeout 60000 (async wait)].
 */
final class Produce implements Scenario {
    @Override
    public void run(Flags f, Map<String, Object> out) throws Exception {
        String namesrv = f.required("namesrv");
        MessageSpec spec = new MessageSpec(f);
        String group = f.str("group", "rmqd-it-producer");
        String mode = f.choice("mode", "sync", "sync", "async", "oneway", "batch");
        int batch = f.integer("batch", 10);
        int sendTimeout = f.integer("send-timeout", 10000);
        int retries = f.integer("retries", 2);
        long timeout = f.longValue("timeout", 60000);
        org.apache.rocketmq.remoting.RPCHook hook = Acl.hook(f);
        f.checkAllUsed();

        int count = spec.count;
        List<Message> msgs = spec.buildAll();

        DefaultMQProducer p = hook == null ? new DefaultMQProducer(group) : new DefaultMQProducer(group, hook);
        p.setNamesrvAddr(namesrv);
        p.setSendMsgTimeout(sendTimeout);
        p.setRetryTimesWhenSendFailed(retries);
        p.setRetryTimesWhenSendAsyncFailed(retries);
        p.setInstanceName("rmqd-it-" + ProcessHandle.current().pid());
        List<Map<String, Object>> sent = new ArrayList<>(count);
        List<String> errors = new ArrayList<>();
        p.start();
        try {
            switch (mode) {
                case "sync":
                    for (int i = 0; i < count; i++) {
                        Map<String, Object> v = Views.sent(msgs.get(i), i);
                        try {
                            Views.result(v, p.send(msgs.get(i)));
                        } catch (Exception e) {
                            v.put("error", Main.describe(e));
                            errors.add("message " + i + ": " + Main.describe(e));
                        }
                        v.put("properties", new java.util.TreeMap<>(msgs.get(i).getProperties()));
                        sent.add(v);
                    }
                    break;
                case "async":
                    sendAsync(p, msgs, sent, errors, timeout);
                    break;
                case "oneway":
                    for (int i = 0; i < count; i++) {
                        Map<String, Object> v = Views.sent(msgs.get(i), i);
                        try {
                            p.sendOneway(msgs.get(i));
                            v.put("status", "ONEWAY");
                            v.put("msgId", MessageClientIDSetter.getUniqID(msgs.get(i)));
                        } catch (Exception e) {
                            v.put("error", Main.describe(e));
                            errors.add("message " + i + ": " + Main.describe(e));
                        }
                        v.put("properties", new java.util.TreeMap<>(msgs.get(i).getProperties()));
                        sent.add(v);
                    }
                    break;
                default:
                    sendBatches(p, msgs, Math.max(1, batch), sent, errors);
            }
        } finally {
            p.shutdown();
        }
        out.put("sent", sent);
        out.put("errors", errors);
        if (!errors.isEmpty()) {
            throw new ScenarioFailure(errors.size() + " of " + count + " sends failed; first: " + errors.get(0));
        }
    }

    private static void sendAsync(DefaultMQProducer p, List<Message> msgs, List<Map<String, Object>> sent,
        List<String> errors, long timeout) throws InterruptedException {
        int n = msgs.size();
        CountDownLatch done = new CountDownLatch(n);
        List<Map<String, Object>> views = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            views.add(Views.sent(msgs.get(i), i));
        }
        for (int i = 0; i < n; i++) {
            final Map<String, Object> v = views.get(i);
            final int idx = i;
            try {
                p.send(msgs.get(i), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult r) {
                        synchronized (v) {
                            Views.result(v, r);
                        }
                        done.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        synchronized (v) {
                            v.put("error", Main.describe(e));
                        }
                        done.countDown();
                    }
                });
            } catch (Exception e) {
                synchronized (v) {
                    v.put("error", Main.describe(e));
                }
                done.countDown();
            }
        }
        if (!done.await(timeout, TimeUnit.MILLISECONDS)) {
            errors.add("async: " + done.getCount() + " callbacks missing after " + timeout + " ms");
        }
        for (int i = 0; i < n; i++) {
            Map<String, Object> v = views.get(i);
            synchronized (v) {
                v.put("properties", new java.util.TreeMap<>(msgs.get(i).getProperties()));
                if (v.containsKey("error")) {
                    errors.add("message " + i + ": " + v.get("error"));
                }
                sent.add(new java.util.LinkedHashMap<>(v));
            }
        }
    }

    private static void sendBatches(DefaultMQProducer p, List<Message> msgs, int batch,
        List<Map<String, Object>> sent, List<String> errors) {
        for (int from = 0; from < msgs.size(); from += batch) {
            List<Message> part = msgs.subList(from, Math.min(msgs.size(), from + batch));
            List<Map<String, Object>> views = new ArrayList<>(part.size());
            for (int j = 0; j < part.size(); j++) {
                views.add(Views.sent(part.get(j), from + j));
            }
            try {
                SendResult r = p.send(new ArrayList<>(part));
                // A batch result carries comma-joined ids and the offset of the first message.
                String[] offIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
                for (int j = 0; j < part.size(); j++) {
                    Map<String, Object> v = views.get(j);
                    Views.result(v, r);
                    v.put("msgId", MessageClientIDSetter.getUniqID(part.get(j)));
                    v.put("offsetMsgId", offIds.length == part.size() ? offIds[j] : "");
                    v.put("queueOffset", r.getQueueOffset() + j);
                    v.put("batchMsgId", r.getMsgId());
                }
            } catch (Exception e) {
                for (Map<String, Object> v : views) {
                    v.put("error", Main.describe(e));
                }
                errors.add("batch at " + from + ": " + Main.describe(e));
            }
            for (int j = 0; j < part.size(); j++) {
                views.get(j).put("properties", new java.util.TreeMap<>(part.get(j).getProperties()));
            }
            sent.addAll(views);
        }
    }
}
