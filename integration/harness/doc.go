// Package harness starts the systems under test (the Apache RocketMQ 5.3.3 name server and broker from the
// Maven jars, or rmqd built from ./cmd/rmqd) on free loopback ports and drives them with clients nobody here
// wrote: the Java scenario runner (rocketmq-client 5.3.3 and 4.9.7), mqadmin 5.3.3 and the Go client.
//
// Everything it starts runs in its own process group, logs to integration/.logs/<test name>/ and is killed by
// t.Cleanup, also when the test fails or times out. Every wait is bounded. The Java side comes from
// `make integration-deps` (integration/java, Maven); without it the tests skip naming that command.
package harness
