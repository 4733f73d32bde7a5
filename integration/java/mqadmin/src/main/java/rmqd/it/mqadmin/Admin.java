package rmqd.it.mqadmin;

import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * mqadmin, unchanged, minus the wait at exit: MQAdminStartup returns from main but the JVM then idles in
 * Netty's graceful shutdown (quiet periods of its event loops) for seconds. The command's work is done
 * and printed by then, so this wrapper flushes and halts. Same arguments and output as MQAdminStartup.
 */
public final class Admin {
    private Admin() {
    }

    public static void main(String[] args) {
        int code = 0;
        try {
            MQAdminStartup.main(args);
        } catch (Throwable e) {
            e.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(code);
    }
}
