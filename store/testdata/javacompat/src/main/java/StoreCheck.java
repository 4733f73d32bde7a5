import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * Usage: StoreCheck <storeDir> <topic> <queues> <appendCount> [halt] [bodyPrefix]
 * Prints "MSG q offset body tags keys" for every message of each queue, "QUERY key n"
 * for an index lookup, then appends appendCount messages and prints "PUT status q offset".
 */
public class StoreCheck {
    public static void main(String[] args) throws Exception {
        String dir = args[0];
        String topic = args[1];
        int queues = Integer.parseInt(args[2]);
        int appends = Integer.parseInt(args[3]);
        boolean halt = args.length > 4 && args[4].equals("halt");
        String prefix = args.length > 5 ? args[5] : "java-";
        MessageStoreConfig c = new MessageStoreConfig();
        c.setStorePathRootDir(dir);
        c.setStorePathCommitLog(dir + "/commitlog");
        c.setMappedFileSizeCommitLog(1 << 20);
        c.setMappedFileSizeConsumeQueue(20 * 1000);
        c.setMaxHashSlotNum(100);
        c.setMaxIndexNum(400);
        c.setTimerWheelEnable(false);
        DefaultMessageStore s = new DefaultMessageStore(c, new BrokerStatsManager("compat", true), null,
            new BrokerConfig(), new ConcurrentHashMap<>());
        if (!s.load()) {
            throw new IllegalStateException("load failed");
        }
        s.start();
        for (int q = 0; q < queues; q++) {
            long off = 0;
            while (true) {
                GetMessageResult r = s.getMessage("g", topic, q, off, 32, null);
                if (r == null || r.getMessageBufferList().isEmpty()) {
                    System.out.println("STATUS " + q + " " + (r == null ? "null" : r.getStatus()) + " max " + s.getMaxOffsetInQueue(topic, q));
                    if (r != null) r.release();
                    break;
                }
                for (ByteBuffer b : r.getMessageBufferList()) {
                    MessageExt m = MessageDecoder.decode(b, true, true, false);
                    System.out.println("MSG " + q + " " + m.getQueueOffset() + " " + new String(m.getBody(), StandardCharsets.UTF_8)
                        + " " + m.getTags() + " " + m.getKeys().replace(' ', '+') + " crc=" + (m.getBodyCRC() == (int) (org.apache.rocketmq.common.UtilAll.crc32(m.getBody()))));
                }
                off = r.getNextBeginOffset();
                r.release();
            }
        }
        QueryMessageResult qr = s.queryMessage(topic, "key3", 32, 0, Long.MAX_VALUE);
        System.out.println("QUERY key3 " + qr.getMessageBufferList().size());
        qr.release();
        for (int i = 0; i < appends; i++) {
            MessageExtBrokerInner m = new MessageExtBrokerInner();
            m.setTopic(topic);
            m.setQueueId(i % queues);
            m.setBody((prefix + i).getBytes(StandardCharsets.UTF_8));
            m.setTags("JTag");
            m.setKeys("jkey" + i);
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "JUNIQ" + i);
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(m.getTags()));
            m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
            m.setBornTimestamp(System.currentTimeMillis());
            m.setBornHost(new InetSocketAddress("127.0.0.1", 4321));
            m.setStoreHost(new InetSocketAddress("127.0.0.1", 10911));
            PutMessageResult pr = s.putMessage(m);
            System.out.println("PUT " + pr.getPutMessageStatus() + " " + (i % queues) + " "
                + pr.getAppendMessageResult().getLogicsOffset());
        }
        if (halt) {
            // A crash: no shutdown, abort file left, checkpoint not flushed.
            System.out.println("HALT");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        Thread.sleep(500); // let reput dispatch before shutdown
        s.shutdown();
        System.out.println("DONE");
        System.exit(0);
    }
}
