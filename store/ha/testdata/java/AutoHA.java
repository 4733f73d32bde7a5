// A Java 5.3.3 DefaultMessageStore in controller mode (AutoSwitchHAService), driven over stdin/stdout by
// store/ha's interop test: "master" puts messages and serves rmqd slaves, "slave" replicates from an rmqd
// master. Compiled by the test: java -cp 'lib/apache/*:classes' AutoHA MODE DIR FILESIZE HAPORT EPOCH BROKERID.
// Commands: "put N" (master), "slave ADDR" (slave: set the master HA address), "epoch N" (master of a new
// epoch), "toslave N ADDR" (a master becomes the slave of ADDR for epoch N), "max", "epochs", "quit".
// Every line out is "MAX <maxPhyOffset> <confirmOffset>" or "EPOCHS e-s,e-s" or "OK".

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.Collections;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.ha.DefaultHAService;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAService;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public class AutoHA {
    /** The stock service, its accept socket bound to 127.0.0.1 (test brokers listen on loopback only). */
    static class LoopbackAutoSwitchHAService extends AutoSwitchHAService {
        @Override
        public void init(DefaultMessageStore store) throws IOException {
            super.init(store);
            int port = store.getMessageStoreConfig().getHaListenPort();
            try {
                Field accept = DefaultHAService.class.getDeclaredField("acceptSocketService");
                accept.setAccessible(true);
                Object svc = accept.get(this);
                Field addr = svc.getClass().getSuperclass().getDeclaredField("socketAddressListen");
                addr.setAccessible(true);
                addr.set(svc, new InetSocketAddress("127.0.0.1", port));
            } catch (ReflectiveOperationException e) {
                throw new IOException("rebind HA accept socket", e);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String dir = args[1];
        int fileSize = Integer.parseInt(args[2]);
        int haPort = Integer.parseInt(args[3]);
        int epoch = Integer.parseInt(args[4]);
        long brokerId = Long.parseLong(args[5]);

        MessageStoreConfig c = new MessageStoreConfig();
        c.setStorePathRootDir(dir);
        c.setStorePathCommitLog(dir + "/commitlog");
        c.setMappedFileSizeCommitLog(fileSize);
        c.setMappedFileSizeConsumeQueue(20 * 1000);
        c.setMaxHashSlotNum(100);
        c.setMaxIndexNum(400);
        c.setFlushDiskType(FlushDiskType.ASYNC_FLUSH);
        c.setHaListenPort(haPort);
        c.setHaSendHeartbeatInterval(200);
        c.setBrokerRole(mode.equals("master") ? BrokerRole.ASYNC_MASTER : BrokerRole.SLAVE);
        BrokerConfig b = new BrokerConfig();
        b.setBrokerId(brokerId);
        b.setEnableControllerMode(true);
        DefaultMessageStore st = new DefaultMessageStore(c, new BrokerStatsManager("b", true), null, b,
            new ConcurrentHashMap<>());
        Field f = DefaultMessageStore.class.getDeclaredField("haService");
        f.setAccessible(true);
        f.set(st, new LoopbackAutoSwitchHAService());
        if (!st.load()) {
            throw new IllegalStateException("load failed");
        }
        st.start();
        AutoSwitchHAService ha = (AutoSwitchHAService) st.getHaService();
        ha.setLocalBrokerId(brokerId);
        if (mode.equals("master")) {
            if (!ha.changeToMaster(epoch)) {
                throw new IllegalStateException("changeToMaster failed");
            }
            ha.setSyncStateSet(Collections.singleton(brokerId));
        } else {
            if (!ha.changeToSlave("", epoch, brokerId)) {
                throw new IllegalStateException("changeToSlave failed");
            }
        }
        System.out.println("OK");
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        int seq = 0;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            switch (cmd[0]) {
                case "put":
                    for (int i = 0, n = Integer.parseInt(cmd[1]); i < n; i++, seq++) {
                        MessageExtBrokerInner m = new MessageExtBrokerInner();
                        m.setTopic("T");
                        m.setTags("tag");
                        m.setKeys("java" + seq);
                        m.setBody(("java message " + seq + " ").repeat(1 + seq % 20).getBytes());
                        m.setQueueId(seq % 4);
                        m.setBornTimestamp(System.currentTimeMillis());
                        m.setBornHost(new InetSocketAddress("127.0.0.1", 40000));
                        m.setStoreHost(new InetSocketAddress("127.0.0.1", 10911));
                        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
                        PutMessageResult r = st.putMessage(m);
                        if (!r.isOk()) {
                            throw new IllegalStateException("put: " + r.getPutMessageStatus());
                        }
                    }
                    break;
                case "slave":
                    ha.updateHaMasterAddress(cmd[1]);
                    break;
                case "epoch":
                    st.getMessageStoreConfig().setBrokerRole(BrokerRole.ASYNC_MASTER);
                    if (!ha.changeToMaster(Integer.parseInt(cmd[1]))) {
                        throw new IllegalStateException("changeToMaster failed");
                    }
                    ha.setSyncStateSet(Collections.singleton(brokerId));
                    break;
                case "toslave":
                    st.getMessageStoreConfig().setBrokerRole(BrokerRole.SLAVE);
                    if (!ha.changeToSlave("", Integer.parseInt(cmd[1]), brokerId)) {
                        throw new IllegalStateException("changeToSlave failed");
                    }
                    ha.updateHaMasterAddress(cmd[2]);
                    break;
                case "epochs":
                    StringJoiner j = new StringJoiner(",");
                    for (EpochEntry e : ha.getEpochEntries()) {
                        j.add(e.getEpoch() + "-" + e.getStartOffset());
                    }
                    System.out.println("EPOCHS " + j);
                    System.out.flush();
                    continue;
                case "quit":
                    st.shutdown();
                    System.out.println("OK");
                    System.out.flush();
                    System.exit(0);
                    return;
                default:
                    break;
            }
            System.out.println("MAX " + st.getMaxPhyOffset() + " " + st.getConfirmOffset());
            System.out.flush();
        }
        st.shutdown();
    }
}
