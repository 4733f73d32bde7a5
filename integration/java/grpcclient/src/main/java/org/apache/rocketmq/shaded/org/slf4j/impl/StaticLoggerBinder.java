package org.apache.rocketmq.shaded.org.slf4j.impl;

import org.apache.rocketmq.shaded.org.slf4j.ILoggerFactory;
import org.apache.rocketmq.shaded.org.slf4j.spi.LoggerFactoryBinder;

/**
 * rocketmq-client-java 5.0.8 ships slf4j-api 1.7 relocated beside a relocated logback that only offers
 * slf4j 2's service provider, so the 1.7 API finds no binder and the client logs nothing: a stalled
 * scenario left no trace of what the client did. This is the binder the relocated 1.7 API looks for; it
 * writes to stderr, which the harness keeps as the scenario's log (level: -Drmqd.grpc.logLevel, default
 * INFO).
 */
public final class StaticLoggerBinder implements LoggerFactoryBinder {
    /** Read by the relocated LoggerFactory to check the binder against its API version. */
    public static String REQUESTED_API_VERSION = "1.7.30";

    private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();

    private final ILoggerFactory factory = new StderrLoggerFactory(System.getProperty("rmqd.grpc.logLevel", "INFO"));

    private StaticLoggerBinder() {
    }

    public static StaticLoggerBinder getSingleton() {
        return SINGLETON;
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public String getLoggerFactoryClassStr() {
        return StderrLoggerFactory.class.getName();
    }
}
