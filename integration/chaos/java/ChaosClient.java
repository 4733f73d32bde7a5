// The chaos driver's Java clients (rocketmq-client 5.3.3, the classic remoting API): one producer sending
// to the concurrent and the orderly topic, and one push consumer per topic in the same groups as the
// driver's Go consumers, so Go and Java share the queues. Run in source-file mode by integration/chaos
// (java -cp 'integration/java/target/lib/client5/*' ChaosClient.java ...), so it needs no Maven module.
//
// Every event is one stdout line the driver enters in its ledger:
//   S <id> <1|0 acknowledged> <start ms> <end ms>     a send ended
//   R <id> <born ms> <now ms>                          a delivery
//   READY                                              the clients started (sends wait for "start-send")
//   D                                                  the producer stopped (after "stop-send" on stdin)
// Ids are "<c|o>-<key>-<seq>" with the driver's body layout "<id>|xxx...". stdin: "stop-send" stops the
// producer, end of input stops everything.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public final class ChaosClient {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    private static synchronized void emit(String line) {
        OUT.println(line);
        OUT.flush();
    }

    public static void main(String[] a) throws Exception {
        // args: namesrv topic key intervalMs
        String namesrv = a[0], topic = a[1], ordTopic = topic + "_ORD";
        int key = Integer.parseInt(a[2]);
        long every = Long.parseLong(a[3]);
        String inst = "chaos-java-" + ProcessHandle.current().pid();

        DefaultMQPushConsumer[] cons = new DefaultMQPushConsumer[2];
        for (int i = 0; i < 2; i++) {
            boolean orderly = i == 1;
            String t = orderly ? ordTopic : topic;
            DefaultMQPushConsumer c = new DefaultMQPushConsumer("chaos-cg-" + t);
            c.setNamesrvAddr(namesrv);
            c.setInstanceName(inst);
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            c.subscribe(t, "*");
            if (orderly) {
                c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                    deliver(msgs);
                    return ConsumeOrderlyStatus.SUCCESS;
                });
            } else {
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    deliver(msgs);
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
            }
            c.start();
            cons[i] = c;
        }

        DefaultMQProducer p = new DefaultMQProducer("chaos-pg-java");
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(inst);
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(2);
        p.start();

        // Sends start on "start-send", once the driver saw the consumers join (a late member takes queues
        // whose offsets were not committed yet and would replay them).
        emit("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && !line.trim().equals("start-send"); ) {
        }
        AtomicBoolean sending = new AtomicBoolean(true);
        Thread[] senders = new Thread[2];
        for (int i = 0; i < 2; i++) {
            boolean orderly = i == 1;
            senders[i] = new Thread(() -> {
                for (int seq = 0; sending.get(); seq++) {
                    String id = (orderly ? "o-" : "c-") + key + "-" + seq;
                    Message m = new Message(orderly ? ordTopic : topic, body(id));
                    m.setKeys(id);
                    long start = System.currentTimeMillis();
                    boolean ok = false;
                    try {
                        SendResult r = orderly
                            ? p.send(m, (List<MessageQueue> mqs, Message msg, Object arg) ->
                                mqs.get(Math.floorMod((Integer) arg, mqs.size())), key)
                            : p.send(m);
                        ok = r.getSendStatus() == SendStatus.SEND_OK;
                    } catch (Exception e) {
                        ok = false;
                    }
                    long end = System.currentTimeMillis();
                    emit("S " + id + " " + (ok ? 1 : 0) + " " + start + " " + end);
                    long pause = ok ? every - (end - start) : 50; // a dead broker answers at once; do not spin
                    if (pause > 0) {
                        try {
                            Thread.sleep(pause);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            });
            senders[i].start();
        }

        for (String line; (line = in.readLine()) != null; ) {
            if (line.trim().equals("stop-send") && sending.getAndSet(false)) {
                for (Thread t : senders) {
                    t.join();
                }
                p.shutdown();
                emit("D");
            }
        }
        sending.set(false);
        for (Thread t : senders) {
            t.join();
        }
        for (DefaultMQPushConsumer c : cons) {
            c.shutdown();
        }
        OUT.flush();
        Runtime.getRuntime().halt(0); // skip Netty's graceful shutdown
    }

    private static void deliver(List<MessageExt> msgs) {
        long now = System.currentTimeMillis();
        for (MessageExt m : msgs) {
            String b = new String(m.getBody(), StandardCharsets.UTF_8);
            int bar = b.indexOf('|');
            if (bar > 0) {
                emit("R " + b.substring(0, bar) + " " + m.getBornTimestamp() + " " + now);
            }
        }
    }

    private static byte[] body(String id) {
        byte[] b = new byte[128];
        Arrays.fill(b, (byte) 'x');
        byte[] h = (id + "|").getBytes(StandardCharsets.UTF_8);
        System.arraycopy(h, 0, b, 0, h.length);
        return b;
    }
}
