import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.*;
import org.apache.rocketmq.client.impl.*;
import org.apache.rocketmq.client.producer.*;
import org.apache.rocketmq.common.message.*;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.protocol.header.*;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import java.util.concurrent.*;
import java.util.*;

/**
 * Drives POP through rocketmq-client 5.3.3's own MQClientAPIImpl (popMessageAsync, ackMessageAsync,
 * changeInvisibleTimeAsync), the calls rocketmq-proxy makes: run by integration/pop_test.go as a Java
 * single-file program on the client5 classpath. Args: namesrv, broker address, broker name, topic, group.
 * Exits 0 when three messages are popped, one acked, one made visible again sooner, and exactly the two
 * unacked ones come back through the retry topic (reconsumeTimes 1, original topic, a retry POP_CK).
 */
public class PopClient5 {
    static void fail(String why) { System.out.println("FAIL " + why); System.exit(1); }

    public static void main(String[] a) throws Exception {
        String ns = a[0], addr = a[1], broker = a[2], topic = a[3], group = a[4];
        DefaultMQProducer p = new DefaultMQProducer("PG_" + group);
        p.setNamesrvAddr(ns); p.start();
        for (int i = 0; i < 3; i++) p.send(new Message(topic, "tagA", ("hello" + i).getBytes()));
        p.shutdown();
        MQClientAPIImpl api = new MQClientAPIImpl(new NettyClientConfig(), new ClientRemotingProcessor(null), null, new ClientConfig());
        api.start();
        List<MessageExt> all = new ArrayList<>();
        for (int round = 0; round < 20 && all.size() < 3; round++) {
            PopMessageRequestHeader h = new PopMessageRequestHeader();
            h.setConsumerGroup(group); h.setTopic(topic); h.setQueueId(-1); h.setMaxMsgNums(32);
            h.setInvisibleTime(2000); h.setPollTime(1000); h.setBornTime(System.currentTimeMillis()); h.setInitMode(ConsumeInitMode.MIN);
            h.setExpType("TAG"); h.setExp("*");
            CompletableFuture<PopResult> f = new CompletableFuture<>();
            api.popMessageAsync(broker, addr, h, 5000, new PopCallback() {
                public void onSuccess(PopResult r) { f.complete(r); }
                public void onException(Throwable e) { f.completeExceptionally(e); }
            });
            PopResult r = f.get(10, TimeUnit.SECONDS);
            System.out.println("pop: " + r.getPopStatus() + " n=" + (r.getMsgFoundList() == null ? 0 : r.getMsgFoundList().size()));
            if (r.getMsgFoundList() != null) all.addAll(r.getMsgFoundList());
        }
        if (all.size() != 3) fail("popped " + all.size() + " of 3");
        MessageExt first = all.get(0);
        String ck = first.getProperty(MessageConst.PROPERTY_POP_CK);
        System.out.println("POP_CK " + ck);
        AckMessageRequestHeader ah = new AckMessageRequestHeader();
        ah.setConsumerGroup(group); ah.setTopic(topic); ah.setQueueId(first.getQueueId());
        ah.setExtraInfo(ck); ah.setOffset(first.getQueueOffset());
        CompletableFuture<AckResult> af = new CompletableFuture<>();
        api.ackMessageAsync(addr, 3000, new AckCallback() {
            public void onSuccess(AckResult r) { af.complete(r); }
            public void onException(Throwable e) { af.completeExceptionally(e); }
        }, ah);
        AckResult ar = af.get(10, TimeUnit.SECONDS);
        System.out.println("ack: " + ar.getStatus());
        if (ar.getStatus() != AckStatus.OK) fail("ack " + ar.getStatus());
        MessageExt second = all.get(1);
        ChangeInvisibleTimeRequestHeader ch = new ChangeInvisibleTimeRequestHeader();
        ch.setConsumerGroup(group); ch.setTopic(topic); ch.setQueueId(second.getQueueId());
        ch.setExtraInfo(second.getProperty(MessageConst.PROPERTY_POP_CK)); ch.setOffset(second.getQueueOffset()); ch.setInvisibleTime(1000L);
        CompletableFuture<AckResult> cf = new CompletableFuture<>();
        api.changeInvisibleTimeAsync(broker, addr, ch, 3000, new AckCallback() {
            public void onSuccess(AckResult r) { cf.complete(r); }
            public void onException(Throwable e) { cf.completeExceptionally(e); }
        });
        AckResult cr = cf.get(10, TimeUnit.SECONDS);
        System.out.println("change: " + cr.getStatus() + " extraInfo=" + cr.getExtraInfo() + " popTime=" + cr.getPopTime());
        if (cr.getStatus() != AckStatus.OK) fail("change invisible time " + cr.getStatus());
        // redelivery of the two unacked
        List<MessageExt> again = new ArrayList<>();
        long end = System.currentTimeMillis() + 30000;
        while (again.size() < 2 && System.currentTimeMillis() < end) {
            PopMessageRequestHeader h = new PopMessageRequestHeader();
            h.setConsumerGroup(group); h.setTopic(topic); h.setQueueId(-1); h.setMaxMsgNums(32);
            h.setInvisibleTime(60000); h.setPollTime(1000); h.setBornTime(System.currentTimeMillis()); h.setInitMode(ConsumeInitMode.MIN);
            CompletableFuture<PopResult> f = new CompletableFuture<>();
            api.popMessageAsync(broker, addr, h, 5000, new PopCallback() {
                public void onSuccess(PopResult r) { f.complete(r); }
                public void onException(Throwable e) { f.completeExceptionally(e); }
            });
            PopResult r = f.get(10, TimeUnit.SECONDS);
            if (r.getMsgFoundList() != null) again.addAll(r.getMsgFoundList());
        }
        Set<String> want = new TreeSet<>(Arrays.asList(new String(all.get(1).getBody()), new String(all.get(2).getBody())));
        Set<String> got = new TreeSet<>();
        for (MessageExt m : again) {
            String ck2 = m.getProperty(MessageConst.PROPERTY_POP_CK);
            System.out.println("again: " + new String(m.getBody()) + " topic=" + m.getTopic() + " reconsume=" + m.getReconsumeTimes() + " ck=" + ck2);
            if (!topic.equals(m.getTopic()) || m.getReconsumeTimes() != 1 || ck2 == null || ck2.split(" ")[4].equals("0")) fail("redelivery " + m);
            got.add(new String(m.getBody()));
        }
        api.shutdown();
        if (!got.equals(want)) fail("redelivered " + got + ", want " + want);
        System.out.println("OK");
        System.exit(0);
    }
}
