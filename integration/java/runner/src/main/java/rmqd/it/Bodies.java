package rmqd.it;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** Deterministic message bodies and their digests, so both sides compare without shipping bodies around. */
final class Bodies {
    private Bodies() {
    }

    /** Body i: "<prefix>-<i>-" then a-z repeated, cut or padded to exactly size bytes (ASCII, easy to read in a dump). */
    static byte[] make(String prefix, int i, int size) {
        byte[] head = (prefix + "-" + i + "-").getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[size];
        for (int j = 0; j < size; j++) {
            b[j] = j < head.length ? head[j] : (byte) ('a' + (j + i) % 26);
        }
        return b;
    }

    static String sha256(byte[] b) {
        if (b == null) {
            return "";
        }
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(b);
            StringBuilder sb = new StringBuilder(64);
            for (byte x : d) {
                sb.append(String.format("%02x", x & 0xff));
            }
            return sb.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The first bytes of a body as text, for humans reading a failing test. */
    static String head(byte[] b) {
        if (b == null) {
            return "";
        }
        int n = Math.min(b.length, 48);
        return new String(b, 0, n, StandardCharsets.ISO_8859_1);
    }
}
