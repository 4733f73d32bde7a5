package integration

import "rmqd/integration/harness"

// javaOutcome is how a runner started by goJava ended.
type javaOutcome struct {
	res *harness.JavaResult
	err error
}

// goJava runs harness.TryJava in the background, for a consumer that must be running while the test acts;
// its outcome arrives on the channel. The test's cleanup waits for the JVM, so it ends before the targets
// started earlier stop, also when the test fails early.
func goJava(tb harness.TB, tg *harness.Target, client, scenario string, args ...string) <-chan javaOutcome {
	out := make(chan javaOutcome, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		res, err := harness.TryJava(tb, tg, client, scenario, args...)
		out <- javaOutcome{res, err}
	}()
	tb.Cleanup(func() { <-ended })
	return out
}
