package auth

import (
	"context"
	"fmt"

	"rmqd/codec"
	"rmqd/processor/acl"
)

// Invoker is the broker's client side towards name servers (processor's
// NameServerInvoker).
type Invoker interface {
	InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error)
}

// signingInvoker signs every request with the inner client credentials.
type signingInvoker struct {
	inner  Invoker
	ak, sk string
}

func (s signingInvoker) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	acl.SignRequest(req, s.ak, s.sk)
	return s.inner.InvokeSync(ctx, addr, req)
}

// onewayInvoker is an Invoker that can also send without waiting (heartbeats).
type onewayInvoker interface {
	InvokeOneway(ctx context.Context, addr string, req *codec.RemotingCommand) error
}

// signingOneway is signingInvoker over a client that sends oneway too: the
// broker's heartbeats to name servers and controllers stay oneway, as Java's
// are, instead of each waiting for an answer once credentials are set.
type signingOneway struct {
	signingInvoker
	ow onewayInvoker
}

func (s signingOneway) InvokeOneway(ctx context.Context, addr string, req *codec.RemotingCommand) error {
	acl.SignRequest(req, s.ak, s.sk)
	return s.ow.InvokeOneway(ctx, addr, req)
}

// SignInner wraps inv so that its requests sign with
// innerClientAuthenticationCredentials; inv is returned as is when they are
// unset.
func (m *Manager) SignInner(inv Invoker) (Invoker, error) {
	return SignInnerWith(m.cfg.InnerClientAuthenticationCredentials, inv)
}

// SignInnerWith wraps inv so that its requests sign with credentials (the
// innerClientAuthenticationCredentials JSON); inv is returned as is when they
// are unset. Java's BrokerOuterAPI signs whenever they are set, whether or not
// the broker authenticates its own clients.
func SignInnerWith(credentials string, inv Invoker) (Invoker, error) {
	ak, sk, ok, err := ParseInnerCredentials(credentials)
	if err != nil || !ok {
		return inv, err
	}
	if sk == "" {
		return nil, fmt.Errorf("auth: innerClientAuthenticationCredentials: secretKey is empty")
	}
	si := signingInvoker{inner: inv, ak: ak, sk: sk}
	if ow, ok := inv.(onewayInvoker); ok {
		return signingOneway{signingInvoker: si, ow: ow}, nil
	}
	return si, nil
}

// Java's default provider classes: the only ones rmqd implements (the
// stateful strategy only caches decisions, so it is served alike).
var defaultProviders = map[string][]string{
	"authenticationProvider":         {"org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider"},
	"authenticationMetadataProvider": {"org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"},
	"authenticationStrategy": {"org.apache.rocketmq.auth.authentication.strategy.StatelessAuthenticationStrategy",
		"org.apache.rocketmq.auth.authentication.strategy.StatefulAuthenticationStrategy"},
	"authorizationProvider":         {"org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider"},
	"authorizationMetadataProvider": {"org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"},
	"authorizationStrategy": {"org.apache.rocketmq.auth.authorization.strategy.StatelessAuthorizationStrategy",
		"org.apache.rocketmq.auth.authorization.strategy.StatefulAuthorizationStrategy"},
}

// CheckProviders refuses provider classes other than Java's defaults: a
// broker.conf naming a custom provider must not run with different rules.
func CheckProviders(props map[string]string) error {
	for key, ok := range defaultProviders {
		v, set := props[key]
		if !set || v == "" {
			continue
		}
		found := false
		for _, d := range ok {
			found = found || v == d
		}
		if !found {
			return fmt.Errorf("auth: %s=%s is not supported (only %v)", key, v, ok)
		}
	}
	return nil
}
