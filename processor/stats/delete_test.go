package stats

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// counts is how many topic and topic@group counters are kept.
func (s *Broker) counts() (topics, groups int) {
	if m := s.topics.Load(); m != nil {
		topics = len(*m)
	}
	if m := s.groups.Load(); m != nil {
		groups = len(*m)
	}
	return topics, groups
}

// Topics and groups that come and go leave no counters behind, and what they
// counted stays in the broker totals.
func TestDeletedTopicsAndGroupsLeaveNoCounters(t *testing.T) {
	var s Broker
	s.SetManual(true)
	sys := func(topic string) bool { return topic == "SYS" }
	s.CountPut("keep", 1, 10, sys)
	s.CountGet("gkeep", "keep", 1, 10, sys)
	s.CountPut("SYS", 1, 10, sys)
	baseT, baseG := s.counts()
	now := time.Now()
	for i := range 200 {
		topic, group := fmt.Sprintf("T%d", i), fmt.Sprintf("G%d", i)
		s.CountPut(topic, 2, 20, sys)
		s.CountGet(group, topic, 2, 20, sys)
		s.CountGet(group, "keep", 1, 10, sys)
		s.Sample(now.Add(time.Duration(i) * time.Second))
		s.DeleteTopic(topic)
		s.DeleteGroup(group)
	}
	topics, groups := s.counts()
	require.Equal(t, baseT, topics)
	require.Equal(t, baseG, groups)
	c, _ := s.Counter("TOPIC_PUT_NUMS", "T7")
	require.Nil(t, c)

	s.Sample(now.Add(time.Hour))
	put, _ := s.Counter("BROKER_PUT_NUMS", "")
	require.EqualValues(t, 1+1+200*2, put.Nums())
	putUser, _ := s.Counter("BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC", "")
	require.EqualValues(t, 1+200*2, putUser.Nums())
	get, _ := s.Counter("BROKER_GET_NUMS", "")
	require.EqualValues(t, 1+200*3, get.Nums())
	require.EqualValues(t, 2*10+200*20, s.PutSizeTotal())
}

// Deletes race sends and pulls of the same topics without a data race, and
// the live counters stay readable.
func TestDeleteRacesCounting(t *testing.T) {
	var s Broker
	s.SetManual(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			s.CountPut(fmt.Sprintf("T%d", i%10), 1, 1, nil)
			s.CountGet("G", fmt.Sprintf("T%d", i%10), 1, 1, nil)
		}
	}()
	for i := range 200 {
		s.DeleteTopic(fmt.Sprintf("T%d", i%10))
		s.DeleteGroup("G")
		s.Sample(time.Now())
	}
	<-done
	s.Sample(time.Now())
	put, _ := s.Counter("BROKER_PUT_NUMS", "")
	require.LessOrEqual(t, put.Nums(), int64(2000))
}
