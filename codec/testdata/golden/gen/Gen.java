// Gen writes rmqd's golden RemotingCommand frames using the real Java codec
// (org.apache.rocketmq:rocketmq-remoting, version pinned in pom.xml).
// Each command is written once per serialize type as <name>.<json|rocketmq>.bin,
// the whole frame as NettyEncoder puts it on the wire: fastEncodeHeader, then the body.
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.function.Supplier;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PullMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.remoting.protocol.header.SendMessageResponseHeader;

public class Gen {
    static final int VERSION = 479; // MQVersion V5_3_3

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args.length > 0 ? args[0] : ".");
        write(dir, "send_v2_request", Gen::sendV2Request);
        write(dir, "send_v1_request", Gen::sendV1Request);
        write(dir, "send_response", Gen::sendResponse);
        write(dir, "pull_request", Gen::pullRequest);
        write(dir, "pull_response", Gen::pullResponse);
        write(dir, "remark", Gen::withRemark);
        write(dir, "null_remark", Gen::nullRemark);
        write(dir, "unknown_code", Gen::unknownCode);
        write(dir, "pop_code", Gen::popCode);
        write(dir, "empty_ext_value", Gen::emptyExtValue);
        write(dir, "no_ext", Gen::noExt);
    }

    static void write(Path dir, String name, Supplier<RemotingCommand> make) throws Exception {
        for (SerializeType t : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
            RemotingCommand cmd = make.get(); // fresh each time: makeCustomHeaderToNet mutates extFields
            cmd.setSerializeTypeCurrentRPC(t);
            ByteBuf out = Unpooled.buffer();
            cmd.fastEncodeHeader(out);
            if (cmd.getBody() != null) {
                out.writeBytes(cmd.getBody());
            }
            byte[] frame = new byte[out.readableBytes()];
            out.readBytes(frame);
            String suffix = t == SerializeType.JSON ? "json" : "rocketmq";
            Files.write(dir.resolve(name + "." + suffix + ".bin"), frame);
        }
    }

    static final String PROPS = "UNIQ_KEY\u0001AC110001000018B4AAC2123456780000\u0002WAIT\u0001true\u0002TAGS\u0001tagA\u0002KEYS\u0001k1 k2\u0002";

    static RemotingCommand sendV2Request() {
        SendMessageRequestHeader v1 = sendHeaderV1();
        v1.setBrokerName("broker-a");
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(v1);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(310, v2);
        cmd.setVersion(VERSION);
        cmd.setOpaque(42);
        cmd.setBody("hello, rmqd".getBytes(StandardCharsets.UTF_8));
        return cmd;
    }

    static SendMessageRequestHeader sendHeaderV1() {
        SendMessageRequestHeader h = new SendMessageRequestHeader();
        h.setProducerGroup("PG");
        h.setTopic("T");
        h.setDefaultTopic("TBW102");
        h.setDefaultTopicQueueNums(4);
        h.setQueueId(1);
        h.setSysFlag(0);
        h.setBornTimestamp(1700000000123L);
        h.setFlag(0);
        h.setProperties(PROPS);
        h.setReconsumeTimes(0);
        h.setUnitMode(false);
        h.setMaxReconsumeTimes(16);
        h.setBatch(false);
        return h;
    }

    static RemotingCommand sendV1Request() {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(10, sendHeaderV1());
        cmd.setVersion(VERSION);
        cmd.setLanguage(LanguageCode.GO);
        cmd.setOpaque(7);
        cmd.setBody(new byte[] {0, 1, 2, (byte) 0xff});
        return cmd;
    }

    static RemotingCommand sendResponse() {
        SendMessageResponseHeader h = new SendMessageResponseHeader();
        h.setMsgId("C0A8000100002A9F0000000000000C2E");
        h.setQueueId(1);
        h.setQueueOffset(17L);
        h.setTransactionId("AC110001000018B4AAC2123456780000");
        RemotingCommand cmd = RemotingCommand.createResponseCommandWithHeader(0, h);
        cmd.setVersion(VERSION);
        cmd.setOpaque(42);
        cmd.addExtField("MSG_REGION", "DefaultRegion");
        cmd.addExtField("TRACE_ON", "true");
        return cmd;
    }

    static RemotingCommand pullRequest() {
        PullMessageRequestHeader h = new PullMessageRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(3);
        h.setQueueOffset(1234567890123L);
        h.setMaxMsgNums(32);
        h.setSysFlag(3);
        h.setCommitOffset(1234567890000L);
        h.setSuspendTimeoutMillis(15000L);
        h.setSubscription("tagA || tagB");
        h.setSubVersion(1700000000999L);
        h.setExpressionType("TAG");
        h.setMaxMsgBytes(1 << 20);
        h.setBrokerName("broker-a");
        RemotingCommand cmd = RemotingCommand.createRequestCommand(11, h);
        cmd.setVersion(VERSION);
        cmd.setOpaque(-5);
        return cmd;
    }

    static RemotingCommand pullResponse() {
        PullMessageResponseHeader h = new PullMessageResponseHeader();
        h.setSuggestWhichBrokerId(0L);
        h.setNextBeginOffset(1234567890124L);
        h.setMinOffset(0L);
        h.setMaxOffset(1234567890200L);
        RemotingCommand cmd = RemotingCommand.createResponseCommandWithHeader(0, h);
        cmd.setVersion(VERSION);
        cmd.setOpaque(-5);
        cmd.setRemark("FOUND");
        cmd.setBody(new byte[] {0, 0, 0, 8, 1, 2, 3, 4});
        return cmd;
    }

    static RemotingCommand withRemark() {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(1,
            "err: \"q\" \\ / \b\f\n\r\t \u0001\u001f\u007f é 中文 \uD83D\uDE00 <>&'");
        cmd.setVersion(VERSION);
        cmd.setOpaque(9);
        return cmd;
    }

    static RemotingCommand nullRemark() {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(34, null);
        cmd.setVersion(VERSION);
        cmd.setOpaque(0);
        cmd.markOnewayRPC();
        cmd.setBody("{\"clientID\":\"c1\"}".getBytes(StandardCharsets.UTF_8));
        return cmd;
    }

    static RemotingCommand unknownCode() {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(9999, null);
        cmd.setVersion(VERSION);
        cmd.setLanguage(LanguageCode.RUST);
        cmd.setOpaque(2147483647);
        cmd.addExtField("foo", "bar");
        return cmd;
    }

    static RemotingCommand popCode() {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(200050, null);
        cmd.setVersion(VERSION);
        cmd.setOpaque(3);
        cmd.addExtField("consumerGroup", "CG");
        return cmd;
    }

    static RemotingCommand emptyExtValue() {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(14, null);
        cmd.setVersion(VERSION);
        cmd.setOpaque(4);
        cmd.addExtField("empty", "");
        return cmd;
    }

    static RemotingCommand noExt() {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(0, null);
        cmd.setVersion(VERSION);
        cmd.setOpaque(5);
        return cmd;
    }
}
