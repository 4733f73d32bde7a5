package processor

// arriving is the store's ArrivingListener: held pulls first, then held POPs, then the delivery service
// whose topic got the message.
func (b *Broker) arriving(topic string, queueID int32, logicOffset, tagsCode, storeTimestamp int64, properties string) {
	b.hold.arriving(topic, queueID, logicOffset, tagsCode, storeTimestamp, properties)
	b.popArriving(topic, queueID, tagsCode, properties)
	switch topic {
	case TopicSchedule:
		b.schedule.Kick()
	case TopicTimer:
		b.timer.Kick()
	}
}
