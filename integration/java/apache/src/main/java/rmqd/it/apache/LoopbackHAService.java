package rmqd.it.apache;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.ha.DefaultHAService;

/**
 * The stock HA service with one change: its accept socket binds to a loopback address instead of the wildcard.
 * Test brokers must listen on 127.0.0.1 only, and DefaultHAService has no bind-address setting (the remoting
 * ports have bindAddress). The broker loads it through META-INF/service/org.apache.rocketmq.store.ha.HAService
 * (ServiceProvider.loadClass in DefaultMessageStore). Bind address: system property rmqd.it.bindAddress,
 * default 127.0.0.1.
 */
public class LoopbackHAService extends DefaultHAService {
    @Override
    public void init(final DefaultMessageStore store) throws IOException {
        super.init(store);
        String host = System.getProperty("rmqd.it.bindAddress", "127.0.0.1");
        int port = store.getMessageStoreConfig().getHaListenPort();
        try {
            Field f = AcceptSocketService.class.getDeclaredField("socketAddressListen");
            f.setAccessible(true);
            f.set(this.acceptSocketService, new InetSocketAddress(host, port));
        } catch (ReflectiveOperationException e) {
            throw new IOException("cannot rebind the HA accept socket to " + host + ":" + port, e);
        }
    }
}
