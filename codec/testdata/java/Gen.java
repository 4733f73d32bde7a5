// Gen writes the Java-produced fixtures under codec/testdata/java/out: the name-server
// bodies as fastjson 1.2.83 / RocketMQ 5.3.3 emit them, and (with a port argument) the
// raw responses of a running Apache name server. Recipe: see README.md next to it.
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.namesrv.kvconfig.KVConfigSerializeWrapper;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.body.*;
import org.apache.rocketmq.remoting.protocol.header.namesrv.*;
import org.apache.rocketmq.remoting.protocol.route.*;
import org.apache.rocketmq.remoting.protocol.statictopic.TopicQueueMappingInfo;

public class Gen {
    static Path out;

    static void write(String name, byte[] b) throws Exception {
        Files.write(out.resolve(name), b);
    }

    static void write(String name, String s) throws Exception {
        write(name, s.getBytes(StandardCharsets.UTF_8));
    }

    static DataVersion dv(long counter, long ts) {
        DataVersion v = new DataVersion();
        v.setCounter(new AtomicLong(counter));
        v.setTimestamp(ts);
        v.setStateVersion(0);
        return v;
    }

    static RegisterBrokerBody registerBody(boolean withMapping) {
        RegisterBrokerBody body = new RegisterBrokerBody();
        TopicConfigAndMappingSerializeWrapper w = body.getTopicConfigSerializeWrapper();
        w.setDataVersion(dv(7, 1700000000123L));
        w.setMappingDataVersion(dv(0, 1700000000000L));
        TopicConfig tbw = new TopicConfig("TBW102", 8, 8, 7);
        TopicConfig test = new TopicConfig("TopicTest", 4, 4, 6);
        test.getAttributes().put("+message.type", "NORMAL");
        TopicConfig order = new TopicConfig("OrderTopic", 2, 2, 6, 3);
        order.setOrder(true);
        order.setTopicFilterType(org.apache.rocketmq.common.TopicFilterType.MULTI_TAG);
        w.getTopicConfigTable().put(tbw.getTopicName(), tbw);
        w.getTopicConfigTable().put(test.getTopicName(), test);
        w.getTopicConfigTable().put(order.getTopicName(), order);
        if (withMapping) {
            TopicQueueMappingInfo info = new TopicQueueMappingInfo("StaticTopic", 2, "broker-a", 1);
            info.getCurrIdMap().put(0, 0);
            info.getCurrIdMap().put(1, 1);
            w.getTopicQueueMappingInfoMap().put("StaticTopic", info);
        }
        body.getFilterServerList().add("10.0.0.9:30000");
        return body;
    }

    public static void main(String[] args) throws Exception {
        out = Paths.get(args[0]);
        Files.createDirectories(out);

        Map<String, String> esc = new TreeMap<>();
        esc.put("s", "a\u0001b\"c\\d/e\u007f\u00e9\u4e2d\ud83d\ude00\n\t\b\f\r<>&'\u2028");
        write("escape_default.json", JSON.toJSONString(esc));
        write("escape_browser.json", JSON.toJSONString(esc, SerializerFeature.BrowserCompatible,
            SerializerFeature.QuoteFieldNames, SerializerFeature.SkipTransientField, SerializerFeature.MapSortField));

        write("dataversion.json", dv(3, 1700000000000L).encode());

        TopicConfig tc = new TopicConfig("TopicTest", 4, 4, 6);
        tc.getAttributes().put("+message.type", "NORMAL");
        write("topicconfig.json", JSON.toJSONString(tc));
        write("topicconfig.txt", tc.encode());
        TopicConfig tcNoAttr = new TopicConfig("T2", 1, 2, 4);
        tcNoAttr.setAttributes(null);
        write("topicconfig_nullattrs.txt", tcNoAttr.encode());

        RegisterBrokerBody body = registerBody(false);
        write("register_plain.json", body.encode(false));
        write("register_compressed.bin", body.encode(true));
        RegisterBrokerBody mbody = registerBody(true);
        write("register_mapping_plain.json", mbody.encode(false));
        write("register_mapping_compressed.bin", mbody.encode(true));

        TopicRouteData route = new TopicRouteData();
        QueueData qd = new QueueData();
        qd.setBrokerName("broker-a");
        qd.setReadQueueNums(4);
        qd.setWriteQueueNums(4);
        qd.setPerm(6);
        route.getQueueDatas().add(qd);
        HashMap<Long, String> addrs = new HashMap<>();
        addrs.put(0L, "10.0.0.5:10911");
        addrs.put(1L, "10.0.0.6:10911");
        route.getBrokerDatas().add(new BrokerData("DefaultCluster", "broker-a", addrs));
        write("route_default.json", route.encode());
        write("route_browser.json", route.encode(SerializerFeature.BrowserCompatible,
            SerializerFeature.QuoteFieldNames, SerializerFeature.SkipTransientField, SerializerFeature.MapSortField));
        route.setOrderTopicConf("broker-a:4");
        write("route_order_browser.json", route.encode(SerializerFeature.BrowserCompatible,
            SerializerFeature.QuoteFieldNames, SerializerFeature.SkipTransientField, SerializerFeature.MapSortField));

        ClusterInfo ci = new ClusterInfo();
        Map<String, BrokerData> bat = new HashMap<>();
        bat.put("broker-a", new BrokerData("DefaultCluster", "broker-a", addrs));
        ci.setBrokerAddrTable(bat);
        Map<String, Set<String>> cat = new HashMap<>();
        cat.put("DefaultCluster", new HashSet<>(Collections.singletonList("broker-a")));
        ci.setClusterAddrTable(cat);
        write("clusterinfo.json", ci.encode());

        TopicList tl = new TopicList();
        tl.getTopicList().add("TopicTest");
        write("topiclist.json", tl.encode());
        tl.setBrokerAddr("10.0.0.5:10911");
        write("topiclist_addr.json", tl.encode());
        write("topiclist_empty.json", new TopicList().encode());

        KVTable kv = new KVTable();
        kv.getTable().put("TopicTest", "broker-a:4");
        write("kvtable.json", kv.encode());

        KVConfigSerializeWrapper kvw = new KVConfigSerializeWrapper();
        HashMap<String, HashMap<String, String>> ct = new HashMap<>();
        ct.put("ORDER_TOPIC_CONFIG", new HashMap<>(kv.getTable()));
        kvw.setConfigTable(ct);
        write("kvconfig.json", kvw.toJson());

        if (args.length > 1) {
            live("127.0.0.1:" + args[1]);
        }
        System.exit(0);
    }

    static void dump(String name, RemotingCommand r) throws Exception {
        StringBuilder sb = new StringBuilder();
        sb.append("code=").append(r.getCode()).append('\n');
        sb.append("remark=").append(r.getRemark()).append('\n');
        sb.append("ext=").append(new TreeMap<>(r.getExtFields() == null ? new HashMap<>() : r.getExtFields())).append('\n');
        write(name + ".txt", sb.toString());
        if (r.getBody() != null) {
            write(name + ".body", r.getBody());
        }
    }

    static void live(String addr) throws Exception {
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        NettyRemotingClient client = new NettyRemotingClient(new NettyClientConfig());
        client.start();

        for (int i = 0; i < 2; i++) {
            RegisterBrokerRequestHeader h = new RegisterBrokerRequestHeader();
            h.setBrokerAddr(i == 0 ? "10.0.0.5:10911" : "10.0.0.6:10911");
            h.setBrokerId((long) i);
            h.setBrokerName("broker-a");
            h.setClusterName("DefaultCluster");
            h.setHaServerAddr(i == 0 ? "10.0.0.5:10912" : "10.0.0.6:10912");
            h.setCompressed(i == 1);
            h.setEnableActingMaster(false);
            RegisterBrokerBody body = registerBody(false);
            byte[] b = body.encode(i == 1);
            h.setBodyCrc32(org.apache.rocketmq.common.UtilAll.crc32(b));
            RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.REGISTER_BROKER, h);
            req.setBody(b);
            dump("live_register_" + i, client.invokeSync(addr, req, 5000));
        }

        GetRouteInfoRequestHeader gh = new GetRouteInfoRequestHeader();
        gh.setTopic("TopicTest");
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, gh);
        dump("live_route_v479", client.invokeSync(addr, req, 5000));
        req = RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, gh);
        req.setVersion(317);
        dump("live_route_v317", client.invokeSync(addr, req, 5000));
        gh.setTopic("NoSuchTopic");
        req = RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, gh);
        dump("live_route_missing", client.invokeSync(addr, req, 5000));

        dump("live_cluster", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_BROKER_CLUSTER_INFO, null), 5000));
        dump("live_alltopics", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, null), 5000));
        dump("live_systopics", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, null), 5000));
        dump("live_config", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_NAMESRV_CONFIG, null), 5000));
        dump("live_unknown", client.invokeSync(addr, RemotingCommand.createRequestCommand(999, null), 5000));

        QueryDataVersionRequestHeader qh = new QueryDataVersionRequestHeader();
        qh.setBrokerAddr("10.0.0.5:10911");
        qh.setBrokerId(0L);
        qh.setBrokerName("broker-a");
        qh.setClusterName("DefaultCluster");
        req = RemotingCommand.createRequestCommand(RequestCode.QUERY_DATA_VERSION, qh);
        req.setBody(dv(7, 1700000000123L).encode());
        dump("live_querydv_same", client.invokeSync(addr, req, 5000));

        GetKVConfigRequestHeader kh = new GetKVConfigRequestHeader();
        kh.setNamespace("ns");
        kh.setKey("k");
        dump("live_getkv_missing", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_KV_CONFIG, kh), 5000));
        // A request missing a @CFNotNull field.
        dump("live_route_noheader", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, null), 5000));

        WipeWritePermOfBrokerRequestHeader wh = new WipeWritePermOfBrokerRequestHeader();
        wh.setBrokerName("broker-a");
        dump("live_wipe", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.WIPE_WRITE_PERM_OF_BROKER, wh), 5000));
        gh.setTopic("TopicTest");
        dump("live_route_wiped", client.invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, gh), 5000));
        client.shutdown();
    }
}
