// BodyOracle: decodes client bodies with the Java broker's own RemotingSerializable.decode (fastjson
// 1.2.83) for codec's differential test (body_oracle_test.go). Input lines are kind TAB hex(body), kind
// heartbeat or lock; output is ERR or the canonical form that canonHeartbeat/canonLock print in Go.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.body.LockBatchRequestBody;
import org.apache.rocketmq.remoting.protocol.heartbeat.*;

public class BodyOracle {
    static String s(Object o) { return o == null || "".equals(o.toString()) ? "~" : o.toString(); }

    static String heartbeat(HeartbeatData h) {
        StringBuilder b = new StringBuilder();
        b.append("id=").append(s(h.getClientID())).append(";fp=").append(h.getHeartbeatFingerprint())
            .append(";ws=").append(h.isWithoutSub()).append(";P[");
        List<String> ps = new ArrayList<>();
        for (ProducerData p : h.getProducerDataSet()) ps.add(s(p.getGroupName()));
        Collections.sort(ps);
        b.append(String.join(",", ps)).append("];C[");
        List<String> cs = new ArrayList<>();
        for (ConsumerData c : h.getConsumerDataSet()) {
            StringBuilder x = new StringBuilder();
            x.append("g=").append(s(c.getGroupName())).append(",ct=").append(s(c.getConsumeType()))
                .append(",mm=").append(s(c.getMessageModel())).append(",cfw=").append(s(c.getConsumeFromWhere()))
                .append(",u=").append(c.isUnitMode()).append(",S[");
            List<String> ss = new ArrayList<>();
            for (SubscriptionData d : c.getSubscriptionDataSet()) {
                List<String> tags = new ArrayList<>(d.getTagsSet());
                Collections.sort(tags);
                List<Integer> codes = new ArrayList<>(d.getCodeSet());
                Collections.sort(codes);
                ss.add("t=" + s(d.getTopic()) + ",s=" + s(d.getSubString()) + ",v=" + d.getSubVersion()
                    + ",e=" + s(d.getExpressionType()) + ",cf=" + d.isClassFilterMode() + ",tags=" + tags + ",codes=" + codes);
            }
            Collections.sort(ss);
            x.append(String.join(";", ss)).append("]");
            cs.add(x.toString());
        }
        Collections.sort(cs);
        return b.append(String.join("|", cs)).append("]").toString();
    }

    static String lock(LockBatchRequestBody l) {
        List<String> qs = new ArrayList<>();
        for (MessageQueue q : l.getMqSet()) qs.add(s(q.getBrokerName()) + "/" + q.getQueueId() + "/" + s(q.getTopic()));
        Collections.sort(qs);
        return "g=" + s(l.getConsumerGroup()) + ";c=" + s(l.getClientId()) + ";o=" + l.isOnlyThisBroker() + ";Q" + qs;
    }

    public static void main(String[] a) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        String line;
        while ((line = r.readLine()) != null) {
            String[] f = line.split("\t", 2);
            byte[] b = new byte[f[1].length() / 2];
            for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(f[1].substring(2 * i, 2 * i + 2), 16);
            try {
                if (f[0].equals("heartbeat")) out.println(heartbeat(RemotingSerializable.decode(b, HeartbeatData.class)));
                else out.println(lock(RemotingSerializable.decode(b, LockBatchRequestBody.class)));
            } catch (Throwable t) {
                out.println("ERR");
            }
        }
        out.flush();
    }
}
