package rmqd.it;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Command-line flags: --name=value or --name value; a bare --name means "true".
 * Every flag given must be read by the scenario, so a typo fails loudly instead of silently using a default.
 */
final class Flags {
    private final Map<String, String> values = new LinkedHashMap<>();
    private final Set<String> used = new LinkedHashSet<>();

    Flags(String[] args, int from) {
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new UsageException("unexpected argument " + a);
            }
            a = a.substring(2);
            int eq = a.indexOf('=');
            if (eq >= 0) {
                values.put(a.substring(0, eq), a.substring(eq + 1));
            } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                values.put(a, args[++i]);
            } else {
                values.put(a, "true");
            }
        }
    }

    String str(String name, String def) {
        used.add(name);
        String v = values.get(name);
        return v == null ? def : v;
    }

    String required(String name) {
        String v = str(name, null);
        if (v == null || v.isEmpty()) {
            throw new UsageException("missing --" + name);
        }
        return v;
    }

    int integer(String name, int def) {
        String v = str(name, null);
        if (v == null) {
            return def;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " wants an integer, got " + v);
        }
    }

    long longValue(String name, long def) {
        String v = str(name, null);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " wants an integer, got " + v);
        }
    }

    boolean bool(String name) {
        String v = str(name, "false");
        return v.equals("true") || v.equals("1");
    }

    String choice(String name, String def, String... allowed) {
        String v = str(name, def);
        for (String a : allowed) {
            if (a.equals(v)) {
                return v;
            }
        }
        throw new UsageException("--" + name + " must be one of " + String.join("|", allowed) + ", got " + v);
    }

    /** Parses "k=v,k2=v2" (the separator is configurable for values holding commas). */
    Map<String, String> map(String name, String sep) {
        Map<String, String> m = new LinkedHashMap<>();
        String v = str(name, "");
        if (v.isEmpty()) {
            return m;
        }
        for (String kv : v.split(java.util.regex.Pattern.quote(sep))) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new UsageException("--" + name + " wants k=v pairs, got " + kv);
            }
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return m;
    }

    void checkAllUsed() {
        for (String k : values.keySet()) {
            if (!used.contains(k)) {
                throw new UsageException("unknown flag --" + k);
            }
        }
    }

    static final class UsageException extends RuntimeException {
        UsageException(String msg) {
            super(msg);
        }
    }
}
