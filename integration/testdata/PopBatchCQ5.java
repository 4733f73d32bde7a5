import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.*;
import org.apache.rocketmq.client.impl.*;
import org.apache.rocketmq.client.producer.*;
import org.apache.rocketmq.common.message.*;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.protocol.header.*;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import java.nio.ByteBuffer;
import java.util.concurrent.*;
import java.util.*;

/**
 * POP on a queue.type=BatchCQ topic through rocketmq-client 5.3.3's own MQClientAPIImpl, run by
 * integration/pop_test.go as a Java single-file program on the client5 classpath. Args: namesrv, broker
 * address, broker name, topic (made BatchCQ by the caller), group, target (rmqd | apache).
 * Two batches sent with DefaultMQProducer.send(Collection) are stored as inner batches (offsets 0-2, 3-4).
 * A POP hands each out whole, as the client sees it for every broker: one MessageExt per batch, INNER_BATCH
 * and NEED_UNWRAP set, queueOffset its first offset, POP_CK naming that offset, the body the batch (the
 * client unwraps only on pull). The first is acked. Then the targets part: rmqd revives the unacked batch
 * once through the retry topic as one message with the same body, and an ordered POP whose batches are all
 * acked goes on after them; Apache 5.3.3 never revives it (its store refuses an inner batch in the retry
 * topic) and its ordered POP hands the last acked batch out again.
 */
public class PopBatchCQ5 {
    static void fail(String why) { System.out.println("FAIL " + why); System.exit(1); }

    static MQClientAPIImpl api;
    static String broker, addr;

    static List<MessageExt> pop(String topic, String group, boolean order, long invisible) throws Exception {
        PopMessageRequestHeader h = new PopMessageRequestHeader();
        h.setConsumerGroup(group); h.setTopic(topic); h.setQueueId(-1); h.setMaxMsgNums(32);
        h.setInvisibleTime(invisible); h.setPollTime(1000); h.setBornTime(System.currentTimeMillis());
        h.setInitMode(ConsumeInitMode.MIN); h.setExpType("TAG"); h.setExp("*"); h.setOrder(order);
        if (order) h.setAttemptId(UUID.randomUUID().toString());
        CompletableFuture<PopResult> f = new CompletableFuture<>();
        api.popMessageAsync(broker, addr, h, 5000, new PopCallback() {
            public void onSuccess(PopResult r) { f.complete(r); }
            public void onException(Throwable e) { f.completeExceptionally(e); }
        });
        PopResult r = f.get(10, TimeUnit.SECONDS);
        List<MessageExt> l = r.getMsgFoundList() == null ? new ArrayList<>() : r.getMsgFoundList();
        System.out.println("pop: " + (order ? "order " : "") + r.getPopStatus() + " n=" + l.size());
        return l;
    }

    static void ack(String topic, String group, MessageExt m) throws Exception {
        AckMessageRequestHeader ah = new AckMessageRequestHeader();
        ah.setConsumerGroup(group); ah.setTopic(topic); ah.setQueueId(m.getQueueId());
        ah.setExtraInfo(m.getProperty(MessageConst.PROPERTY_POP_CK)); ah.setOffset(m.getQueueOffset());
        CompletableFuture<AckResult> af = new CompletableFuture<>();
        api.ackMessageAsync(addr, 3000, new AckCallback() {
            public void onSuccess(AckResult r) { af.complete(r); }
            public void onException(Throwable e) { af.completeExceptionally(e); }
        }, ah);
        AckResult ar = af.get(10, TimeUnit.SECONDS);
        System.out.println("ack: offset " + m.getQueueOffset() + " " + ar.getStatus());
        if (ar.getStatus() != AckStatus.OK) fail("ack " + ar.getStatus());
    }

    static List<String> inner(MessageExt m) throws Exception {
        List<String> out = new ArrayList<>();
        for (Message x : MessageDecoder.decodeMessages(ByteBuffer.wrap(m.getBody()))) out.add(new String(x.getBody()));
        return out;
    }

    static void send(DefaultMQProducer p, String topic, String prefix, int n, long wantOffset) throws Exception {
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < n; i++) batch.add(new Message(topic, "tagA", (prefix + i).getBytes()));
        SendResult r = p.send(batch);
        System.out.println("send: " + r.getSendStatus() + " offset " + r.getQueueOffset());
        if (r.getSendStatus() != SendStatus.SEND_OK || r.getQueueOffset() != wantOffset) fail("send " + r);
    }

    public static void main(String[] a) throws Exception {
        String ns = a[0], topic = a[3], group = a[4], target = a[5];
        addr = a[1]; broker = a[2];
        DefaultMQProducer p = new DefaultMQProducer("PG_" + group);
        p.setNamesrvAddr(ns); p.start();
        send(p, topic, "a", 3, 0);
        send(p, topic, "b", 2, 3);
        api = new MQClientAPIImpl(new NettyClientConfig(), new ClientRemotingProcessor(null), null, new ClientConfig());
        api.start();

        List<MessageExt> all = new ArrayList<>();
        for (int round = 0; round < 20 && all.size() < 2; round++) all.addAll(pop(topic, group, false, 2000));
        if (all.size() != 2) fail("popped " + all.size() + " of 2 batches");
        Map<Long, List<String>> want = new HashMap<>();
        want.put(0L, Arrays.asList("a0", "a1", "a2"));
        want.put(3L, Arrays.asList("b0", "b1"));
        MessageExt first = null, second = null;
        for (MessageExt m : all) {
            String ck = m.getProperty(MessageConst.PROPERTY_POP_CK);
            System.out.println("popped: offset " + m.getQueueOffset() + " sysFlag " + m.getSysFlag() + " INNER_NUM "
                + m.getProperty("INNER_NUM") + " ck " + ck + " inner " + inner(m));
            if ((m.getSysFlag() & 0xC0) != 0xC0) fail("not an inner batch: " + m);
            if (!inner(m).equals(want.get(m.getQueueOffset()))) fail("batch at " + m.getQueueOffset() + ": " + inner(m));
            String[] f = ck.split(" ");
            if (Long.parseLong(f[f.length - 1]) != m.getQueueOffset()) fail("POP_CK " + ck + " for offset " + m.getQueueOffset());
            if (m.getQueueOffset() == 0) first = m; else second = m;
        }
        ack(topic, group, first);

        // The unacked batch through the retry topic (invisible for 2 s).
        List<MessageExt> again = new ArrayList<>();
        long end = System.currentTimeMillis() + ("apache".equals(target) ? 10000 : 30000);
        while (again.isEmpty() && System.currentTimeMillis() < end) again.addAll(pop(topic, group, false, 60000));
        if ("apache".equals(target)) {
            if (!again.isEmpty()) fail("Apache revived the batch: " + again);
            System.out.println("again: none (Apache's store refuses an inner batch in the retry topic)");
        } else {
            if (again.size() != 1) fail("revived " + again.size() + " messages, want the one batch");
            MessageExt m = again.get(0);
            System.out.println("again: offset " + m.getQueueOffset() + " sysFlag " + m.getSysFlag() + " reconsume "
                + m.getReconsumeTimes() + " topic " + m.getTopic() + " inner " + inner(m));
            if (!topic.equals(m.getTopic()) || m.getReconsumeTimes() != 1 || (m.getSysFlag() & 0x80) != 0
                || !inner(m).equals(want.get(3L))) fail("redelivery " + m);
            ack(topic, group, m);
        }

        // Ordered POP, another group: both batches, both acked, then what follows.
        String og = group + "_o";
        List<MessageExt> ord = new ArrayList<>();
        for (int round = 0; round < 20 && ord.size() < 2; round++) ord.addAll(pop(topic, og, true, 60000));
        if (ord.size() != 2) fail("ordered pop got " + ord.size() + " of 2 batches");
        for (MessageExt m : ord) ack(topic, og, m);
        send(p, topic, "c", 2, 5);
        List<MessageExt> next = new ArrayList<>();
        for (int round = 0; round < 20 && next.isEmpty(); round++) next.addAll(pop(topic, og, true, 60000));
        if (next.isEmpty()) fail("ordered pop got nothing after the acked batches");
        System.out.println("ordered next: offset " + next.get(0).getQueueOffset() + " inner " + inner(next.get(0)));
        long wantNext = "apache".equals(target) ? 3 : 5; // Apache: the last acked batch again
        if (next.get(0).getQueueOffset() != wantNext) fail("ordered pop after the acked batches at " + next.get(0).getQueueOffset() + ", want " + wantNext);
        p.shutdown();
        api.shutdown();
        System.out.println("OK");
        System.exit(0);
    }
}
