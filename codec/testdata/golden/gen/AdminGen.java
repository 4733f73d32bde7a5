// AdminGen writes golden frames of the admin, offset, transaction and POP
// request headers with the real Java classes (rocketmq-remoting 5.3.3), one
// frame per serialize type as admin_<name>.<json|rocketmq>.bin, the same way
// Gen does. Every field of each header is set to a distinct value so the Go
// test (admin_golden_test.go) can tell a misnamed field from a default.
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.function.Supplier;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.apache.rocketmq.remoting.protocol.header.*;

public class AdminGen {
    static final int VERSION = 479; // MQVersion V5_3_3

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args.length > 0 ? args[0] : ".");
        write(dir, "pop", 200050, AdminGen::pop);
        write(dir, "notification", 200054, AdminGen::notification);
        write(dir, "peek", 200052, AdminGen::peek);
        write(dir, "ack", 200051, AdminGen::ack);
        write(dir, "create_topic", 17, AdminGen::createTopic);
        write(dir, "send_back", 36, AdminGen::sendBack);
        write(dir, "reset_offset", 222, AdminGen::resetOffset);
        write(dir, "reset_offset_nulls", 222, AdminGen::resetOffsetNulls);
        write(dir, "query_consume_queue", 321, AdminGen::queryConsumeQueue);
        write(dir, "query_message", 12, AdminGen::queryMessage);
        write(dir, "end_transaction", 37, AdminGen::endTransaction);
        write(dir, "update_consumer_offset", 15, AdminGen::updateConsumerOffset);
        write(dir, "query_consumer_offset", 14, AdminGen::queryConsumerOffset);
        write(dir, "query_consumer_offset_null", 14, AdminGen::queryConsumerOffsetNull);
        write(dir, "recall", 370, AdminGen::recall);
        write(dir, "view_message", 33, AdminGen::viewMessage);
        write(dir, "get_max_offset", 30, AdminGen::getMaxOffset);
        write(dir, "get_min_offset", 31, AdminGen::getMinOffset);
        write(dir, "get_earliest_msg_storetime", 32, AdminGen::getEarliest);
        write(dir, "search_offset", 29, AdminGen::searchOffset);
        write(dir, "notify_broker_role_changed", 1008, AdminGen::notifyRoleChanged);
    }

    static void write(Path dir, String name, int code, Supplier<CommandCustomHeader> make) throws Exception {
        for (SerializeType t : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
            RemotingCommand cmd = RemotingCommand.createRequestCommand(code, make.get());
            cmd.setVersion(VERSION);
            cmd.setOpaque(code);
            cmd.setSerializeTypeCurrentRPC(t);
            ByteBuf out = Unpooled.buffer();
            cmd.fastEncodeHeader(out);
            byte[] frame = new byte[out.readableBytes()];
            out.readBytes(frame);
            String suffix = t == SerializeType.JSON ? "json" : "rocketmq";
            Files.write(dir.resolve("admin_" + name + "." + suffix + ".bin"), frame);
        }
    }

    static CommandCustomHeader pop() {
        PopMessageRequestHeader h = new PopMessageRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(-1);
        h.setMaxMsgNums(32);
        h.setInvisibleTime(60000L);
        h.setPollTime(15000L);
        h.setBornTime(1700000000123L);
        h.setInitMode(1);
        h.setExpType("TAG");
        h.setExp("tagA || tagB");
        h.setOrder(Boolean.TRUE);
        h.setAttemptId("attempt-1");
        return h;
    }

    static CommandCustomHeader notification() {
        NotificationRequestHeader h = new NotificationRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(2);
        h.setPollTime(20000L);
        h.setBornTime(1700000000456L);
        h.setOrder(Boolean.TRUE);
        h.setAttemptId("attempt-2");
        return h;
    }

    static CommandCustomHeader peek() {
        PeekMessageRequestHeader h = new PeekMessageRequestHeader();
        h.setTopic("T");
        h.setQueueId(3);
        h.setMaxMsgNums(16);
        h.setConsumerGroup("CG");
        return h;
    }

    static CommandCustomHeader ack() {
        AckMessageRequestHeader h = new AckMessageRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(1);
        h.setExtraInfo("0 1700000000123 60000 0 1 broker-a 1 17");
        h.setOffset(17L);
        return h;
    }

    static CommandCustomHeader createTopic() {
        CreateTopicRequestHeader h = new CreateTopicRequestHeader();
        h.setTopic("NewTopic");
        h.setDefaultTopic("TBW102");
        h.setReadQueueNums(8);
        h.setWriteQueueNums(6);
        h.setPerm(6);
        h.setTopicFilterType("SINGLE_TAG");
        h.setTopicSysFlag(2);
        h.setOrder(Boolean.TRUE);
        h.setAttributes("+message.type=FIFO");
        h.setForce(Boolean.FALSE);
        return h;
    }

    static CommandCustomHeader sendBack() {
        ConsumerSendMsgBackRequestHeader h = new ConsumerSendMsgBackRequestHeader();
        h.setOffset(123456789L);
        h.setGroup("CG");
        h.setDelayLevel(3);
        h.setOriginMsgId("AC110001000018B4AAC2123456780000");
        h.setOriginTopic("T");
        h.setUnitMode(true);
        h.setMaxReconsumeTimes(5);
        return h;
    }

    static CommandCustomHeader resetOffset() {
        ResetOffsetRequestHeader h = new ResetOffsetRequestHeader();
        h.setTopic("T");
        h.setGroup("CG");
        h.setTimestamp(1700000000789L);
        h.setForce(true);
        h.setQueueId(4);
        h.setOffset(99L);
        return h;
    }

    // The mqadmin form: offset left null, queueId at its Java default.
    static CommandCustomHeader resetOffsetNulls() {
        ResetOffsetRequestHeader h = new ResetOffsetRequestHeader();
        h.setTopic("T");
        h.setGroup("CG");
        h.setTimestamp(1700000000789L);
        h.setForce(false);
        return h;
    }

    static CommandCustomHeader queryConsumeQueue() {
        QueryConsumeQueueRequestHeader h = new QueryConsumeQueueRequestHeader();
        h.setTopic("T");
        h.setQueueId(5);
        h.setIndex(1234567890123L);
        h.setCount(10);
        h.setConsumerGroup("CG");
        return h;
    }

    static CommandCustomHeader queryMessage() {
        QueryMessageRequestHeader h = new QueryMessageRequestHeader();
        h.setTopic("T");
        h.setKey("k1");
        h.setMaxNum(64);
        h.setBeginTimestamp(1700000000000L);
        h.setEndTimestamp(1700000099999L);
        return h;
    }

    static CommandCustomHeader endTransaction() {
        EndTransactionRequestHeader h = new EndTransactionRequestHeader();
        h.setTopic("T");
        h.setProducerGroup("PG");
        h.setTranStateTableOffset(42L);
        h.setCommitLogOffset(9876543210L);
        h.setCommitOrRollback(8); // TRANSACTION_COMMIT_TYPE
        h.setFromTransactionCheck(Boolean.TRUE);
        h.setMsgId("C0A8000100002A9F0000000000000C2E");
        h.setTransactionId("AC110001000018B4AAC2123456780000");
        return h;
    }

    static CommandCustomHeader updateConsumerOffset() {
        UpdateConsumerOffsetRequestHeader h = new UpdateConsumerOffsetRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(6);
        h.setCommitOffset(5555L);
        return h;
    }

    static CommandCustomHeader queryConsumerOffset() {
        QueryConsumerOffsetRequestHeader h = new QueryConsumerOffsetRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(7);
        h.setSetZeroIfNotFound(Boolean.FALSE);
        return h;
    }

    static CommandCustomHeader queryConsumerOffsetNull() {
        QueryConsumerOffsetRequestHeader h = new QueryConsumerOffsetRequestHeader();
        h.setConsumerGroup("CG");
        h.setTopic("T");
        h.setQueueId(0);
        return h;
    }

    static CommandCustomHeader recall() {
        RecallMessageRequestHeader h = new RecallMessageRequestHeader();
        h.setProducerGroup("PG");
        h.setTopic("T");
        h.setRecallHandle("djAgVCBicm9rZXItYSAxNzAwMDAwMDAwMTIzIEFDMTE=");
        return h;
    }

    static CommandCustomHeader viewMessage() {
        ViewMessageRequestHeader h = new ViewMessageRequestHeader();
        h.setTopic("T");
        h.setOffset(3141592653L);
        return h;
    }

    static CommandCustomHeader getMaxOffset() {
        GetMaxOffsetRequestHeader h = new GetMaxOffsetRequestHeader();
        h.setTopic("T");
        h.setQueueId(2);
        h.setCommitted(true);
        return h;
    }

    static CommandCustomHeader getMinOffset() {
        GetMinOffsetRequestHeader h = new GetMinOffsetRequestHeader();
        h.setTopic("T");
        h.setQueueId(3);
        return h;
    }

    static CommandCustomHeader getEarliest() {
        GetEarliestMsgStoretimeRequestHeader h = new GetEarliestMsgStoretimeRequestHeader();
        h.setTopic("T");
        h.setQueueId(4);
        return h;
    }

    static CommandCustomHeader searchOffset() {
        SearchOffsetRequestHeader h = new SearchOffsetRequestHeader();
        h.setTopic("T");
        h.setQueueId(5);
        h.setTimestamp(1700000000321L);
        h.setBoundaryType(BoundaryType.UPPER);
        return h;
    }

    static CommandCustomHeader notifyRoleChanged() {
        NotifyBrokerRoleChangedRequestHeader h = new NotifyBrokerRoleChangedRequestHeader();
        h.setMasterAddress("127.0.0.1:10911");
        h.setMasterEpoch(3);
        h.setSyncStateSetEpoch(4);
        h.setMasterBrokerId(1L);
        return h;
    }
}
