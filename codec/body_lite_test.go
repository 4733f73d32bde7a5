package codec

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What proxy 5.5 sends (fastjson2: enums by name, the set as an array).
const liteCtlJava = `{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"10.0.0.1@1234@0@abc","group":"LG",` +
	`"liteTopicSet":["order-1","order-2"],"offsetOption":{"type":"POLICY","value":2},"topic":"Parent","version":3}]}`

func TestDecodeLiteSubscriptionCtlBody(t *testing.T) {
	b, err := DecodeLiteSubscriptionCtlBody([]byte(liteCtlJava))
	require.NoError(t, err)
	require.Equal(t, []LiteSubscriptionDTO{{Action: "PARTIAL_ADD", ClientID: "10.0.0.1@1234@0@abc", Group: "LG", Topic: "Parent",
		LiteTopicSet: []string{"order-1", "order-2"}, OffsetOption: &LiteOffsetOption{Type: "POLICY", Value: LitePolicyMax}, Version: 3}},
		b.SubscriptionSet)

	// Ordinals, as fastjson 1 may write them, and no offset option.
	b, err = DecodeLiteSubscriptionCtlBody([]byte(`{"subscriptionSet":[{"action":3,"clientId":"c"}]}`))
	require.NoError(t, err)
	require.Equal(t, "COMPLETE_REMOVE", b.SubscriptionSet[0].Action)
	require.Nil(t, b.SubscriptionSet[0].OffsetOption)

	for _, bad := range []string{`{"subscriptionSet":[{"action":"DROP_ALL"}]}`, `{"subscriptionSet":[{"clientId":"c"}]}`,
		`{"subscriptionSet":[{"action":"PARTIAL_ADD","offsetOption":{"type":"SOMETIME"}}]}`, `[1]`} {
		_, err := DecodeLiteSubscriptionCtlBody([]byte(bad))
		require.Error(t, err, bad)
	}
	many := `{"subscriptionSet":[` + strings.Repeat(`{"action":"PARTIAL_ADD"},`, MaxLiteCtlEntries) + `{"action":"PARTIAL_ADD"}]}`
	_, err = DecodeLiteSubscriptionCtlBody([]byte(many))
	require.ErrorContains(t, err, "more than 1024 entries")
	topics := `{"subscriptionSet":[{"action":"PARTIAL_ADD","liteTopicSet":[` + strings.Repeat(`"t",`, MaxLiteCtlTopics) + `"t"]}]}`
	_, err = DecodeLiteSubscriptionCtlBody([]byte(topics))
	require.ErrorContains(t, err, "more than 65536 lite topics")
}

// FuzzDecodeLiteSubscriptionCtlBody: no LITE_SUBSCRIPTION_CTL body panics the
// decoder, and what it accepts is within its bounds and names known actions.
func FuzzDecodeLiteSubscriptionCtlBody(f *testing.F) {
	f.Add([]byte(liteCtlJava))
	f.Add([]byte(`{"subscriptionSet":[{"action":2,"clientId":"c","group":"g","topic":"t","liteTopicSet":["a"],"version":"7"}]}`))
	f.Add([]byte(`{subscriptionSet:[{action:'COMPLETE_REMOVE',clientId:'c'},null]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := DecodeLiteSubscriptionCtlBody(b)
		if err != nil {
			return
		}
		if len(body.SubscriptionSet) > MaxLiteCtlEntries {
			t.Fatalf("%d entries", len(body.SubscriptionSet))
		}
		n := 0
		for _, e := range body.SubscriptionSet {
			n += len(e.LiteTopicSet)
			if !slices.Contains(liteActionNames, e.Action) {
				t.Fatalf("action %q", e.Action)
			}
			if e.OffsetOption != nil && !slices.Contains(liteOffsetTypeNames, e.OffsetOption.Type) {
				t.Fatalf("offset option %+v", e.OffsetOption)
			}
		}
		if n > MaxLiteCtlTopics {
			t.Fatalf("%d lite topics", n)
		}
	})
}
