package org.apache.rocketmq.shaded.org.slf4j.impl;

import java.io.PrintStream;
import java.time.Instant;
import org.apache.rocketmq.shaded.org.slf4j.helpers.FormattingTuple;
import org.apache.rocketmq.shaded.org.slf4j.helpers.MarkerIgnoringBase;
import org.apache.rocketmq.shaded.org.slf4j.helpers.MessageFormatter;

/** A logger writing "time LEVEL [thread] name - message" lines (and stack traces) to stderr. */
final class StderrLogger extends MarkerIgnoringBase {
    private static final long serialVersionUID = 1L;
    private static final String[] NAMES = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR"};
    private static final int TRACE = 0, DEBUG = 1, INFO = 2, WARN = 3, ERROR = 4;

    private final int threshold;

    StderrLogger(String name, int threshold) {
        this.name = name;
        this.threshold = threshold;
    }

    static int levelOf(String name) {
        for (int i = 0; i < NAMES.length; i++) {
            if (NAMES[i].equals(name)) {
                return i;
            }
        }
        return INFO;
    }

    private boolean on(int level) {
        return level >= threshold;
    }

    private void log(int level, String format, Object[] args, Throwable t) {
        if (!on(level)) {
            return;
        }
        FormattingTuple ft = MessageFormatter.arrayFormat(format, args, t);
        String line = Instant.now() + " " + NAMES[level] + " [" + Thread.currentThread().getName() + "] " + name
            + " - " + ft.getMessage();
        PrintStream err = System.err;
        synchronized (err) {
            err.println(line);
            if (ft.getThrowable() != null) {
                ft.getThrowable().printStackTrace(err);
            }
        }
    }

    private void log(int level, String msg, Throwable t) {
        log(level, msg, null, t);
    }

    @Override public boolean isTraceEnabled() { return on(TRACE); }
    @Override public void trace(String msg) { log(TRACE, msg, null); }
    @Override public void trace(String f, Object a) { log(TRACE, f, new Object[] {a}, null); }
    @Override public void trace(String f, Object a, Object b) { log(TRACE, f, new Object[] {a, b}, null); }
    @Override public void trace(String f, Object... args) { log(TRACE, f, args, null); }
    @Override public void trace(String msg, Throwable t) { log(TRACE, msg, t); }

    @Override public boolean isDebugEnabled() { return on(DEBUG); }
    @Override public void debug(String msg) { log(DEBUG, msg, null); }
    @Override public void debug(String f, Object a) { log(DEBUG, f, new Object[] {a}, null); }
    @Override public void debug(String f, Object a, Object b) { log(DEBUG, f, new Object[] {a, b}, null); }
    @Override public void debug(String f, Object... args) { log(DEBUG, f, args, null); }
    @Override public void debug(String msg, Throwable t) { log(DEBUG, msg, t); }

    @Override public boolean isInfoEnabled() { return on(INFO); }
    @Override public void info(String msg) { log(INFO, msg, null); }
    @Override public void info(String f, Object a) { log(INFO, f, new Object[] {a}, null); }
    @Override public void info(String f, Object a, Object b) { log(INFO, f, new Object[] {a, b}, null); }
    @Override public void info(String f, Object... args) { log(INFO, f, args, null); }
    @Override public void info(String msg, Throwable t) { log(INFO, msg, t); }

    @Override public boolean isWarnEnabled() { return on(WARN); }
    @Override public void warn(String msg) { log(WARN, msg, null); }
    @Override public void warn(String f, Object a) { log(WARN, f, new Object[] {a}, null); }
    @Override public void warn(String f, Object a, Object b) { log(WARN, f, new Object[] {a, b}, null); }
    @Override public void warn(String f, Object... args) { log(WARN, f, args, null); }
    @Override public void warn(String msg, Throwable t) { log(WARN, msg, t); }

    @Override public boolean isErrorEnabled() { return on(ERROR); }
    @Override public void error(String msg) { log(ERROR, msg, null); }
    @Override public void error(String f, Object a) { log(ERROR, f, new Object[] {a}, null); }
    @Override public void error(String f, Object a, Object b) { log(ERROR, f, new Object[] {a, b}, null); }
    @Override public void error(String f, Object... args) { log(ERROR, f, args, null); }
    @Override public void error(String msg, Throwable t) { log(ERROR, msg, t); }
}
