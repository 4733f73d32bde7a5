// Package filter is the broker's message filtering: tag subscriptions ("a || b",
// "*") and RocketMQ's SQL92 property selectors, compiled once per subscription and
// evaluated per message without allocating.
//
// The semantics follow the Java broker (rocketmq-filter's SelectorParser and
// expression classes, broker ExpressionMessageFilter, FilterAPI), including its
// oddities: NOT binds tighter than comparisons, the parser stops after the first
// complete expression, a missing property makes a comparison NULL (no match), and
// a value Java cannot convert (Integer.valueOf("abc")) aborts the whole evaluation,
// which the broker treats as "no match".
package filter
