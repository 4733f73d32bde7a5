package rmqd.it;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * --ak / --sk (and optional --token): the client signs every request with Java's own AclClientRPCHook, as an
 * application using ACL 1.0 credentials does. Without --ak no hook is installed.
 */
final class Acl {
    private Acl() {
    }

    static RPCHook hook(Flags f) {
        String ak = f.str("ak", null);
        String sk = f.str("sk", null);
        String token = f.str("token", null);
        if (ak == null) {
            return null;
        }
        if (sk == null) {
            throw new Flags.UsageException("--ak needs --sk");
        }
        return new AclClientRPCHook(token == null ? new SessionCredentials(ak, sk) : new SessionCredentials(ak, sk, token));
    }
}
