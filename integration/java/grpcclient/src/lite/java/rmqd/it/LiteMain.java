package rmqd.it;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Lite topics (RocketMQ 5.5) through rocketmq-proxy with rocketmq-client-java 5.2+: a LitePushConsumer bound to
 * --topic subscribes to the --lites, a producer sends --count messages to each (interleaved), and every one must
 * arrive once, in order per lite topic; the first delivery of --fail-first messages of the first lite topic is
 * answered FAILURE (redelivered in order). Then the first lite topic is unsubscribed and one more message is sent
 * to each: only the others' arrive. With --wildcard-group, a consumer of that (lite.sub.wildcard) group, started
 * first and subscribing to nothing, must get the messages sent at the end to two lite topics no one named (it joins
 * with the client's first full sync, 30 s after its start; the messages go after that). Built only into lib/grpclite (module grpclite, client-java 5.2.0), as the
 * API does not exist in the pinned 5.0.8. Same output contract as GrpcMain.
 *
 *   java -cp 'target/lib/grpclite/*' rmqd.it.LiteMain --endpoints 127.0.0.1:8081 --topic T --group G --lites a,b
 */
public final class LiteMain {
    private LiteMain() {
    }

    public static void main(String[] args) {
        GrpcMain.execute("lite", args, 0, LiteMain::run);
    }

    private static void run(Flags f, Map<String, Object> out) throws Exception {
        String endpoints = f.required("endpoints");
        String topic = f.required("topic");
        String group = f.required("group");
        List<String> lites = Arrays.asList(f.required("lites").split(","));
        int count = f.integer("count", 5);
        int failFirst = f.integer("fail-first", 0);
        String exclusiveGroup = f.str("exclusive-group", "");
        String wildcardGroup = f.str("wildcard-group", "");
        long deadline = System.currentTimeMillis() + f.longValue("deadline", 100000) - 5000;
        f.checkAllUsed();

        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoints).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        List<String> wildGot = new CopyOnWriteArrayList<>();
        long wildJoined = System.currentTimeMillis() + 32000; // the client's first full sync, and the proxy's hop
        if (!wildcardGroup.isEmpty()) {
            provider.newLitePushConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(wildcardGroup)
                .bindTopic(topic).setMessageListener(mv -> {
                    wildGot.add(mv.getLiteTopic().orElse("") + ":" + StandardCharsets.UTF_8.decode(mv.getBody()));
                    return ConsumeResult.SUCCESS;
                }).build();
        }
        List<Map<String, Object>> received = new CopyOnWriteArrayList<>();
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        LitePushConsumer consumer = provider.newLitePushConsumerBuilder().setClientConfiguration(cfg)
            .setConsumerGroup(group).bindTopic(topic).setMessageListener(mv -> {
                String body = StandardCharsets.UTF_8.decode(mv.getBody()).toString();
                int n = attempts.merge(body, 1, Integer::sum);
                Map<String, Object> v = new LinkedHashMap<>();
                v.put("lite", mv.getLiteTopic().orElse(""));
                v.put("body", body);
                v.put("attempt", mv.getDeliveryAttempt());
                String prefix = lites.get(0) + "-";
                boolean fail = n == 1 && body.startsWith(prefix)
                    && Integer.parseInt(body.substring(prefix.length())) < failFirst;
                v.put("result", fail ? "FAILURE" : "SUCCESS");
                received.add(v);
                return fail ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
            }).build();
        for (String l : lites) {
            consumer.subscribeLite(l);
        }
        Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build();
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            for (String l : lites) {
                String body = l + "-" + i;
                producer.send(provider.newMessageBuilder().setTopic(topic).setLiteTopic(l)
                    .setBody(body.getBytes(StandardCharsets.UTF_8)).build());
                sent.add(body);
            }
        }
        out.put("sent", sent);
        out.put("received", received);
        int want = count * lites.size() + Math.min(failFirst, count);
        while (received.size() < want && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        if (received.size() < want) {
            throw new ScenarioFailure("timeout: " + received.size() + " of " + want + " deliveries");
        }
        // Unsubscribed from the first lite topic: its next message stays in the broker.
        consumer.unsubscribeLite(lites.get(0));
        out.put("subscribedAfter", new ArrayList<>(consumer.getLiteTopicSet()));
        for (String l : lites) {
            String body = l + "-" + count;
            producer.send(provider.newMessageBuilder().setTopic(topic).setLiteTopic(l)
                .setBody(body.getBytes(StandardCharsets.UTF_8)).build());
        }
        want += lites.size() - 1;
        while (received.size() < want && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep(Math.min(3000, Math.max(0, deadline - System.currentTimeMillis())));
        if (!exclusiveGroup.isEmpty()) {
            exclusive(provider, cfg, producer, topic, exclusiveGroup, deadline, out);
        }
        if (!wildcardGroup.isEmpty()) {
            out.put("wildcardGot", wildGot);
            // Java's broker tells a wildcard group of messages that arrive after it joined, not before.
            Thread.sleep(Math.max(0, Math.min(wildJoined, deadline) - System.currentTimeMillis()));
            for (String l : new String[] {"wild-1", "wild-2"}) {
                producer.send(provider.newMessageBuilder().setTopic(topic).setLiteTopic(l)
                    .setBody((l + "-0").getBytes(StandardCharsets.UTF_8)).build());
            }
            while (!(wildGot.contains("wild-1:wild-1-0") && wildGot.contains("wild-2:wild-2-0"))
                && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            Thread.sleep(Math.min(1000, Math.max(0, deadline - System.currentTimeMillis())));
        }
        // Consumers are not closed: close() waits out the open long poll, and the JVM halts when done.
    }

    /**
     * An exclusive group (lite.sub.model=Exclusive): consumer A subscribes to lite topic "solo", then B does; the
     * broker takes it from A and tells it (NOTIFY_UNSUBSCRIBE_LITE through the proxy), and the next message goes
     * to B.
     */
    private static void exclusive(ClientServiceProvider provider, ClientConfiguration cfg, Producer producer,
        String topic, String group, long deadline, Map<String, Object> out) throws Exception {
        List<String> got = new CopyOnWriteArrayList<>();
        LitePushConsumer[] cs = new LitePushConsumer[2];
        for (int i = 0; i < 2; i++) {
            String who = i == 0 ? "A:" : "B:";
            cs[i] = provider.newLitePushConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(group)
                .bindTopic(topic).setMessageListener(mv -> {
                    got.add(who + StandardCharsets.UTF_8.decode(mv.getBody()));
                    return ConsumeResult.SUCCESS;
                }).build();
            cs[i].subscribeLite("solo");
        }
        long until = Math.min(deadline, System.currentTimeMillis() + 15000);
        while (cs[0].getLiteTopicSet().contains("solo") && System.currentTimeMillis() < until) {
            Thread.sleep(100);
        }
        out.put("exclusiveA", new ArrayList<>(cs[0].getLiteTopicSet()));
        out.put("exclusiveB", new ArrayList<>(cs[1].getLiteTopicSet()));
        producer.send(provider.newMessageBuilder().setTopic(topic).setLiteTopic("solo")
            .setBody("solo-0".getBytes(StandardCharsets.UTF_8)).build());
        while (got.isEmpty() && System.currentTimeMillis() < until) {
            Thread.sleep(100);
        }
        Thread.sleep(Math.min(1000, Math.max(0, deadline - System.currentTimeMillis())));
        out.put("exclusiveGot", got);
    }
}
