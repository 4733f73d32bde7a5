package rmqd.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * consume: subscribes and records every delivery until --count distinct message ids arrived or --timeout passed.
 *
 * Flags: --namesrv, --topic, [--group], [--mode push|litepull], [--model clustering|broadcasting], [--orderly],
 * [--filter tag|sql], [--expr *], [--count 1], [--timeout 30000], [--from first|last],
 * [--linger 0 (ms to keep listening after --count, to catch duplicates or extra messages)],
 * [--until path (the wait for --count and the linger end once this file exists, created by the test
 * when it saw what it waited for; short of --count that is a failure like the timeout)],
 * [--until-each 0 (push: the linger ends once each of --count messages was delivered this many times, as a
 * reset of the group's offsets brings them again)],
 * [--poll-namesrv 30000 (setPollNameServerInterval: how soon a route change is seen)],
 * [--reconsume 0 (push concurrently: answer RECONSUME_LATER to the first N deliveries of each message, so the
 * client sends it back (CONSUMER_SEND_MSG_BACK) and it returns through %RETRY%group)],
 * [--retry-delay-level 1 (delay level of those send-backs; 1 = 1 s instead of the broker's 10 s)]
 * [--max-reconsume -1 (push: setMaxReconsumeTimes; past it the broker moves the message to %DLQ%group)].
 * With --reconsume, --count counts messages consumed successfully. Each delivery has "outcome"
 * (SUCCESS or RECONSUME_LATER).
 * Reaching the timeout before --count is a failure (ok=false) but the deliveries seen so far are still reported.
 */
final class Consume implements Scenario {
    private final Object lock = new Object();
    private final List<Map<String, Object>> received = new ArrayList<>();
    private final Set<String> distinct = new LinkedHashSet<>();
    private final Set<String> succeeded = new LinkedHashSet<>();
    private final java.util.Map<String, Integer> attempts = new java.util.HashMap<>();
    private CountDownLatch enough;
    private int want;
    private int reconsume;

    @Override
    public void run(Flags f, Map<String, Object> out) throws Exception {
        String namesrv = f.required("namesrv");
        String topic = f.required("topic");
        String group = f.str("group", "rmqd-it-consumer");
        String mode = f.choice("mode", "push", "push", "litepull");
        boolean broadcasting = f.choice("model", "clustering", "clustering", "broadcasting").equals("broadcasting");
        boolean orderly = f.bool("orderly");
        boolean sql = f.choice("filter", "tag", "tag", "sql").equals("sql");
        String expr = f.str("expr", "*");
        want = f.integer("count", 1);
        long timeout = f.longValue("timeout", 30000);
        boolean fromLast = f.choice("from", "first", "first", "last").equals("last");
        long linger = f.longValue("linger", 0);
        String untilFile = f.str("until", "");
        int untilEach = f.integer("until-each", 0);
        long pollNamesrv = f.longValue("poll-namesrv", 30000);
        reconsume = f.integer("reconsume", 0);
        int retryDelayLevel = f.integer("retry-delay-level", 1);
        int maxReconsume = f.integer("max-reconsume", -1);
        // 5.x only: queues come from the broker (QUERY_ASSIGNMENT), in PULL or POP as the group's mode says.
        boolean serverRebalance = f.bool("server-rebalance");
        org.apache.rocketmq.remoting.RPCHook hook = Acl.hook(f);
        f.checkAllUsed();
        if (reconsume > 0 && (!mode.equals("push") || orderly)) {
            throw new Flags.UsageException("--reconsume needs --mode push without --orderly");
        }

        enough = new CountDownLatch(1);
        if (want <= 0) {
            enough.countDown();
        }
        ConsumeFromWhere from = fromLast ? ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET : ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET;
        MessageSelector selector = sql ? MessageSelector.bySql(expr) : MessageSelector.byTag(expr);
        String instance = "rmqd-it-" + ProcessHandle.current().pid();
        boolean reached;
        if (mode.equals("push")) {
            DefaultMQPushConsumer c = hook == null ? new DefaultMQPushConsumer(group) : new DefaultMQPushConsumer(null, group, hook);
            c.setNamesrvAddr(namesrv);
            c.setInstanceName(instance);
            c.setPollNameServerInterval((int) pollNamesrv);
            Compat.setMessageModel(c, broadcasting ? "BROADCASTING" : "CLUSTERING");
            c.setConsumeFromWhere(from);
            if (serverRebalance) {
                Compat.call(c, "setClientRebalance", false);
            }
            // Let running listeners finish so their offsets are committed by shutdown (else the last
            // messages stay uncommitted and admin tools see a lag).
            c.setAwaitTerminationMillisWhenShutdown(5000);
            if (maxReconsume >= 0) {
                c.setMaxReconsumeTimes(maxReconsume); // sent as maxReconsumeTimes on each send-back
            }
            c.subscribe(topic, selector);
            if (orderly) {
                c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                    record(msgs);
                    return ConsumeOrderlyStatus.SUCCESS;
                });
            } else {
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    if (reconsume > 0) {
                        ctx.setDelayLevelWhenNextConsume(retryDelayLevel);
                    }
                    return record(msgs) ? ConsumeConcurrentlyStatus.CONSUME_SUCCESS : ConsumeConcurrentlyStatus.RECONSUME_LATER;
                });
            }
            c.start();
            try {
                Path until = untilFile.isEmpty() ? null : Paths.get(untilFile);
                long deadline = System.currentTimeMillis() + timeout;
                while (enough.getCount() > 0 && System.currentTimeMillis() < deadline && !stopAsked(until)) {
                    enough.await(Math.max(1, Math.min(200, deadline - System.currentTimeMillis())), TimeUnit.MILLISECONDS);
                }
                reached = enough.getCount() == 0;
                long lingerEnd = System.currentTimeMillis() + linger;
                while (System.currentTimeMillis() < lingerEnd && !stopAsked(until) && (untilEach <= 0 || !eachDelivered(untilEach))) {
                    Thread.sleep(Math.max(1, Math.min(200, lingerEnd - System.currentTimeMillis())));
                }
            } finally {
                c.shutdown();
            }
        } else {
            DefaultLitePullConsumer c = hook == null ? new DefaultLitePullConsumer(group) : new DefaultLitePullConsumer(group, hook);
            c.setNamesrvAddr(namesrv);
            c.setInstanceName(instance);
            c.setPollNameServerInterval((int) pollNamesrv);
            Compat.setMessageModel(c, broadcasting ? "BROADCASTING" : "CLUSTERING");
            c.setConsumeFromWhere(from);
            c.setAutoCommit(true);
            c.subscribe(topic, selector);
            c.start();
            try {
                Path until = untilFile.isEmpty() ? null : Paths.get(untilFile);
                long deadline = System.currentTimeMillis() + timeout;
                while (enough.getCount() > 0 && System.currentTimeMillis() < deadline && !stopAsked(until)) {
                    record(c.poll(Math.max(1, Math.min(1000, deadline - System.currentTimeMillis()))));
                }
                reached = enough.getCount() == 0;
                long lingerEnd = System.currentTimeMillis() + linger;
                while (System.currentTimeMillis() < lingerEnd && !stopAsked(until)) {
                    record(c.poll(Math.max(1, Math.min(500, lingerEnd - System.currentTimeMillis()))));
                }
                c.commitSync();
            } finally {
                c.shutdown();
            }
        }
        synchronized (lock) {
            out.put("received", new ArrayList<>(received));
            out.put("distinct", distinct.size());
            out.put("duplicates", received.size() - distinct.size());
            out.put("succeeded", succeeded.size());
        }
        out.put("timedOut", !reached);
        if (!reached) {
            String why = !untilFile.isEmpty() && stopAsked(Paths.get(untilFile)) ? "stopped by " + untilFile : "timed out after " + timeout + " ms";
            throw new ScenarioFailure(why + " with " + distinct.size() + " of " + want + " messages");
        }
    }

    /** Whether the test created the --until file. */
    private static boolean stopAsked(Path until) {
        return until != null && Files.exists(until);
    }

    /** Whether --count distinct messages arrived and each of them at least times times. */
    private boolean eachDelivered(int times) {
        synchronized (lock) {
            return attempts.size() >= want && attempts.values().stream().allMatch(n -> n >= times);
        }
    }

    /** Records deliveries; false = the batch is to be consumed again later (--reconsume). */
    private boolean record(List<MessageExt> msgs) {
        if (msgs == null) {
            return true;
        }
        boolean ok = true;
        synchronized (lock) {
            for (MessageExt m : msgs) {
                int n = attempts.merge(m.getMsgId(), 1, Integer::sum);
                ok &= n > reconsume;
            }
            for (MessageExt m : msgs) {
                Map<String, Object> v = Views.received(m);
                v.put("outcome", ok ? "SUCCESS" : "RECONSUME_LATER");
                received.add(v);
                distinct.add(m.getMsgId());
                if (ok) {
                    succeeded.add(m.getMsgId());
                }
            }
            if ((reconsume > 0 ? succeeded.size() : distinct.size()) >= want) {
                enough.countDown();
            }
        }
        return ok;
    }
}
