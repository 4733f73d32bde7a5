package org.apache.rocketmq.shaded.org.slf4j.impl;

import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.shaded.org.slf4j.ILoggerFactory;
import org.apache.rocketmq.shaded.org.slf4j.Logger;

/** One StderrLogger per name, all at one threshold. */
final class StderrLoggerFactory implements ILoggerFactory {
    private final int threshold;
    private final ConcurrentMap<String, Logger> loggers = new ConcurrentHashMap<>();

    StderrLoggerFactory(String level) {
        this.threshold = StderrLogger.levelOf(level.trim().toUpperCase(Locale.ROOT));
    }

    @Override
    public Logger getLogger(String name) {
        return loggers.computeIfAbsent(name, n -> new StderrLogger(n, threshold));
    }
}
