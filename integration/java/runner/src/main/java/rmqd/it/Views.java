package rmqd.it;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

/** Messages and send results as JSON-ready maps. Field names are the contract with integration/harness (Msg). */
final class Views {
    private Views() {
    }

    /** What the producer built: the properties map is the full one the client will put on the wire. */
    static Map<String, Object> sent(Message m, int index) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("index", index);
        v.put("topic", m.getTopic());
        v.put("tags", nz(m.getTags()));
        v.put("keys", nz(m.getKeys()));
        v.put("bodySize", m.getBody() == null ? 0 : m.getBody().length);
        v.put("bodySha256", Bodies.sha256(m.getBody()));
        v.put("bodyHead", Bodies.head(m.getBody()));
        v.put("properties", new TreeMap<>(m.getProperties()));
        return v;
    }

    static void result(Map<String, Object> v, SendResult r) {
        v.put("status", r.getSendStatus().name());
        v.put("msgId", nz(r.getMsgId()));
        v.put("offsetMsgId", nz(r.getOffsetMsgId()));
        v.put("brokerName", r.getMessageQueue() == null ? "" : r.getMessageQueue().getBrokerName());
        v.put("queueId", r.getMessageQueue() == null ? -1 : r.getMessageQueue().getQueueId());
        v.put("queueOffset", r.getQueueOffset());
    }

    static Map<String, Object> received(MessageExt m) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("msgId", nz(m.getMsgId()));
        v.put("offsetMsgId", m instanceof MessageClientExt ? nz(((MessageClientExt) m).getOffsetMsgId()) : "");
        v.put("topic", m.getTopic());
        v.put("brokerName", nz(m.getBrokerName()));
        v.put("queueId", m.getQueueId());
        v.put("queueOffset", m.getQueueOffset());
        v.put("commitLogOffset", m.getCommitLogOffset());
        v.put("tags", nz(m.getTags()));
        v.put("keys", nz(m.getKeys()));
        v.put("bodySize", m.getBody() == null ? 0 : m.getBody().length);
        v.put("bodySha256", Bodies.sha256(m.getBody()));
        v.put("bodyHead", Bodies.head(m.getBody()));
        v.put("bodyCRC", m.getBodyCRC());
        v.put("sysFlag", m.getSysFlag());
        v.put("reconsumeTimes", m.getReconsumeTimes());
        v.put("bornHost", host(m.getBornHost()));
        v.put("storeHost", host(m.getStoreHost()));
        v.put("bornTimestamp", m.getBornTimestamp());
        v.put("storeTimestamp", m.getStoreTimestamp());
        v.put("properties", new TreeMap<>(m.getProperties()));
        return v;
    }

    /** "ip:port", without the hostname/ prefix SocketAddress.toString adds. */
    private static String host(java.net.SocketAddress a) {
        if (a instanceof java.net.InetSocketAddress) {
            java.net.InetSocketAddress i = (java.net.InetSocketAddress) a;
            String ip = i.getAddress() == null ? i.getHostString() : i.getAddress().getHostAddress();
            return ip + ":" + i.getPort();
        }
        return a == null ? "" : a.toString();
    }

    private static String nz(String s) {
        return s == null ? "" : s;
    }
}
