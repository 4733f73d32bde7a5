#!/bin/sh
# Manual compatibility check: an Apache RocketMQ 5.3.3 broker and mqadmin against
# rmqd's name server, all inside a private network namespace (only its loopback
# exists, so the Java broker's 0.0.0.0 listeners reach nothing outside).
#
#   mvn dependency:copy-dependencies of org.apache.rocketmq:rocketmq-broker:5.3.3 into /tmp/xb
#   and of org.apache.rocketmq:rocketmq-tools:5.3.3 into /tmp/x (see codec/testdata/java/README.md)
#   unshare -rn namesrv/testdata/java_broker_check.sh "bin/rmqd namesrv"
#
# Expected (last run 2026-11-30): clusterList shows broker-a V5_3_3 ACTIVATED; TBW102
# routes with perm 7 and 8 queues; sendMessage to a new topic returns SEND_OK and
# the topic gets a route (the broker's single-topic registration); after the
# broker stops, the topic has no route (UNREGISTER_BROKER). The same setup with the
# Go client v2.1.2 (producer.SendSync to TBW102 and to a new topic, admin
# FetchAllTopicList) also worked: its hand-split brokerAddrs parser reads the quoted ids.
# BROKER_CP='/tmp/xb497/*' (rocketmq-broker 4.9.7) gives the same results.
set -u
NAMESRV_CMD=${1:?command that starts rmqd name server on 127.0.0.1:9876}
W=${WORKDIR:-/tmp/jb}
mkdir -p "$W" && rm -rf "$W/store"
cat > "$W/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
namesrvAddr=127.0.0.1:9876
brokerIP1=127.0.0.1
listenPort=10911
storePathRootDir=$W/store
storePathCommitLog=$W/store/commitlog
autoCreateTopicEnable=true
mappedFileSizeCommitLog=67108864
CONF
# 4.9.x brokers insist on $ROCKETMQ_HOME/conf/logback_broker.xml.
mkdir -p "$W/conf"
cat > "$W/conf/logback_broker.xml" <<XML
<configuration><appender name="F" class="ch.qos.logback.core.FileAppender"><file>$W/broker49.log</file>
<encoder><pattern>%d %p %t - %m%n</pattern></encoder></appender><root level="INFO"><appender-ref ref="F"/></root></configuration>
XML
ip link set lo up
export ROCKETMQ_HOME=$W
$NAMESRV_CMD > "$W/ns.log" 2>&1 &
NS=$!
sleep 2
java -Xms512m -Xmx512m -Duser.home="$W" -cp "${BROKER_CP:-/tmp/xb/*}" org.apache.rocketmq.broker.BrokerStartup -c "$W/broker.conf" > "$W/broker.out" 2>&1 &
BR=$!
sleep 40
adm() { echo "### mqadmin $*"; timeout 90 java -Duser.home="$W" -cp '/tmp/x/*' org.apache.rocketmq.tools.command.MQAdminStartup "$@" -n 127.0.0.1:9876 2>&1 | grep -v SLF4J | head -40; }
adm clusterList
adm topicRoute -t TBW102
adm sendMessage -t NewTopic -p hello-from-java
adm topicRoute -t NewTopic
kill $BR
sleep 15
adm topicRoute -t NewTopic
kill $NS
wait
