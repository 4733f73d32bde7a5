package rmqd.it;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * txproduce: transactional sends (half message, then END_TRANSACTION), and answers to the broker's
 * CHECK_TRANSACTION_STATE calls for messages left unknown.
 *
 * Flags: the MessageSpec ones, --namesrv, [--group rmqd-it-tx-producer], [--tx commit,rollback,unknown
 * (local outcome of message i = item i mod n)], [--check commit|rollback (answer to a check)],
 * [--await-checks 30000 (ms to stay up until every unknown message was checked at least once)],
 * A check about a message whose local outcome was commit or rollback gets that outcome again.
 * [--send-timeout 10000 (the client default, 3000, is too short on a loaded 2-core machine)].
 * Each sent entry has "localState" (what executeLocalTransaction returned) and "checks" (how many times the
 * broker asked about it); the result has "checks" (total). Missing checks after --await-checks fail the run.
 */
final class TxProduce implements Scenario {
    @Override
    public void run(Flags f, Map<String, Object> out) throws Exception {
        String namesrv = f.required("namesrv");
        MessageSpec spec = new MessageSpec(f);
        String group = f.str("group", "rmqd-it-tx-producer");
        List<String> plan = Arrays.asList(f.str("tx", "commit,rollback,unknown").split(","));
        String check = f.choice("check", "commit", "commit", "rollback");
        long awaitChecks = f.longValue("await-checks", 30000);
        int sendTimeout = f.integer("send-timeout", 10000);
        f.checkAllUsed();
        for (String s : plan) {
            state(s);
        }

        Map<String, AtomicInteger> checksById = new ConcurrentHashMap<>();
        Map<String, LocalTransactionState> local = new ConcurrentHashMap<>();
        AtomicInteger checks = new AtomicInteger();
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setSendMsgTimeout(sendTimeout);
        p.setInstanceName("rmqd-it-" + ProcessHandle.current().pid());
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                LocalTransactionState st = state(plan.get((Integer) arg % plan.size()));
                local.put(MessageClientIDSetter.getUniqID(msg), st);
                return st;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.incrementAndGet();
                // The checked message is decoded as a plain MessageExt: its msgId is the offset id, the client id
                // is in UNIQ_KEY.
                String id = MessageClientIDSetter.getUniqID(msg);
                checksById.computeIfAbsent(id == null ? msg.getMsgId() : id, k -> new AtomicInteger()).incrementAndGet();
                // Like a real application: a decided transaction keeps its answer (the broker may ask about
                // one whose END_TRANSACTION it has not seen yet); only unknown ones get --check.
                LocalTransactionState st = id == null ? null : local.get(id);
                return st == null || st == LocalTransactionState.UNKNOW ? state(check) : st;
            }
        });
        List<Map<String, Object>> sent = new ArrayList<>(spec.count);
        List<String> errors = new ArrayList<>();
        List<String> unknownIds = new ArrayList<>();
        p.start();
        try {
            for (int i = 0; i < spec.count; i++) {
                Message m = spec.build(i);
                Map<String, Object> v = Views.sent(m, i);
                try {
                    TransactionSendResult r = p.sendMessageInTransaction(m, i);
                    Views.result(v, r);
                    v.put("localState", r.getLocalTransactionState().name());
                    v.put("transactionId", r.getTransactionId() == null ? "" : r.getTransactionId());
                    if (r.getLocalTransactionState() == LocalTransactionState.UNKNOW) {
                        unknownIds.add(MessageClientIDSetter.getUniqID(m));
                    }
                } catch (Exception e) {
                    v.put("error", Main.describe(e));
                    errors.add("message " + i + ": " + Main.describe(e));
                }
                v.put("properties", new java.util.TreeMap<>(m.getProperties()));
                sent.add(v);
            }
            long deadline = System.currentTimeMillis() + awaitChecks;
            while (!allChecked(unknownIds, checksById) && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            // Give the check answer (END_TRANSACTION, oneway) a moment to leave before the channel closes.
            Thread.sleep(unknownIds.isEmpty() ? 0 : 500);
        } finally {
            p.shutdown();
        }
        for (Map<String, Object> v : sent) {
            AtomicInteger n = checksById.get(String.valueOf(v.get("msgId")));
            v.put("checks", n == null ? 0 : n.get());
        }
        out.put("sent", sent);
        out.put("errors", errors);
        out.put("checks", checks.get());
        if (!errors.isEmpty()) {
            throw new ScenarioFailure(errors.size() + " of " + spec.count + " sends failed; first: " + errors.get(0));
        }
        if (!allChecked(unknownIds, checksById)) {
            throw new ScenarioFailure("not every unknown transaction was checked within " + awaitChecks + " ms (" + checks.get() + " checks)");
        }
    }

    private static boolean allChecked(List<String> ids, Map<String, AtomicInteger> checks) {
        for (String id : ids) {
            if (!checks.containsKey(id)) {
                return false;
            }
        }
        return true;
    }

    private static LocalTransactionState state(String s) {
        switch (s) {
            case "commit":
                return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback":
                return LocalTransactionState.ROLLBACK_MESSAGE;
            case "unknown":
                return LocalTransactionState.UNKNOW;
            default:
                throw new Flags.UsageException("transaction outcome must be commit, rollback or unknown, got " + s);
        }
    }
}
