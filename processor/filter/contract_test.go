package filter

import "rmqd/store"

// The store asks compiled subscriptions which messages a pull returns.
var _ store.MessageFilter = (*Expression)(nil)
