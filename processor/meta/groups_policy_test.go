package meta

import (
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestGroupRetryPolicyPartial: a policy given in part takes Java's defaults
// for the rest, as fastjson fills a new ExponentialRetryPolicy or
// CustomizedRetryPolicy; a max of 0 would mean no backoff at all to the proxy.
func TestGroupRetryPolicyPartial(t *testing.T) {
	var g SubscriptionGroupConfig
	require.NoError(t, codec.UnmarshalBody([]byte(`{"groupName":"G","groupRetryPolicy":{"type":"EXPONENTIAL",`+
		`"exponentialRetryPolicy":{"initial":1000},"customizedRetryPolicy":{}}}`), &g))
	require.Equal(t, &ExponentialRetryPolicy{Initial: 1000, Max: 7200000, Multiplier: 2}, g.GroupRetryPolicy.ExponentialRetryPolicy)
	require.Len(t, g.GroupRetryPolicy.CustomizedRetryPolicy.Next, 18)
	require.EqualValues(t, 7200000, g.GroupRetryPolicy.CustomizedRetryPolicy.Next[17])

	// Unset, both stay out of the body, as Java writes its default.
	out, err := codec.MarshalBody(NewSubscriptionGroupConfig("G"))
	require.NoError(t, err)
	require.Contains(t, string(out), `"groupRetryPolicy":{"type":"CUSTOMIZED"}`)
	require.NotContains(t, string(out), "subscriptionDataSet")
}
