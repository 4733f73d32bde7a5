// Package auth is ACL 2.0 on the broker (5.3's authenticationEnabled /
// authorizationEnabled): an RPC hook that authenticates each request's
// signature against its user and authorizes it against the user's policies,
// and the AUTH_* admin codes that manage users and ACLs. Users and ACLs live
// in <storePathRootDir>/config/auth.json. The Java rules are in compat/auth.
package auth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
	"rmqd/processor/acl"
)

// FileName is where users and ACLs are kept, under <storePathRootDir>/config.
// (Java keeps them in RocksDB under authConfigPath; only the wire bodies must
// match, so rmqd keeps a JSON file it can write crash-safely.)
const FileName = "auth.json"

// Config is the broker.conf side of ACL 2.0 (Java's AuthConfig).
type Config struct {
	AuthenticationEnabled bool
	AuthorizationEnabled  bool
	// InitAuthenticationUser is JSON {"username":..,"password":..}: the super
	// user created at first start (when no user exists with that name).
	InitAuthenticationUser string
	// InnerClientAuthenticationCredentials is JSON {"accessKey":..,
	// "secretKey":..}: how the broker's own requests sign.
	InnerClientAuthenticationCredentials string
	// AuthenticationWhitelist / AuthorizationWhitelist are request codes
	// (comma separated) exempt from each check.
	AuthenticationWhitelist string
	AuthorizationWhitelist  string
	ClusterName             string // the Cluster resource's name
	StoreRoot               string // storePathRootDir
}

// state is the users and ACLs in force; never changed once published.
type state struct {
	users   map[string]*jauth.User
	acls    map[string]*jauth.Acl   // by subject key
	secrets map[string]*jacl.Secret // by user: keyed MACs to reuse
}

// keySecrets fills st.secrets, reusing old's where the password is the same.
func (st *state) keySecrets(old *state) {
	st.secrets = make(map[string]*jacl.Secret, len(st.users))
	for name, u := range st.users {
		if old != nil {
			if s := old.secrets[name]; s != nil && s.Key() == u.Password {
				st.secrets[name] = s
				continue
			}
		}
		st.secrets[name] = jacl.NewSecret(u.Password)
	}
}

// Manager holds users and ACLs; readers (the hook) load a snapshot without
// locks, writers (the admin codes) copy, persist, then publish.
type Manager struct {
	cfg     Config
	path    string
	log     *slog.Logger
	authnWL map[int32]bool
	authzWL map[int32]bool

	cur atomic.Pointer[state]
	mu  sync.Mutex // serializes writes

	refusals *acl.RefusalLog
	needs    sync.Pool // *[]need
	scratch  sync.Pool // *[]byte, the signed header values
}

// fileForm is auth.json.
type fileForm struct {
	Users []jauth.UserInfo `json:"users"`
	Acls  []jauth.AclInfo  `json:"acls"`
}

// NewManager loads the users and ACLs and creates the initial super user.
func NewManager(cfg Config, logger *slog.Logger) (*Manager, error) {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{cfg: cfg, path: filepath.Join(cfg.StoreRoot, "config", FileName), log: logger.With("component", "auth")}
	m.refusals = acl.NewRefusalLog(m.log, "auth: request refused", "user")
	m.needs.New = func() any { n := make([]need, 0, 4); return &n }
	m.scratch.New = func() any { b := make([]byte, 0, 512); return &b }
	m.authnWL = parseWhitelist(cfg.AuthenticationWhitelist, m.log, "authenticationWhitelist")
	m.authzWL = parseWhitelist(cfg.AuthorizationWhitelist, m.log, "authorizationWhitelist")
	st, err := load(m.path)
	if err != nil {
		return nil, err
	}
	m.cur.Store(st)
	if err := m.initUser(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseWhitelist reads a comma-separated list of request codes. Java compares
// the entries as strings with the code's decimal form, so an entry that is no
// number never matches: it is skipped with a warning rather than refused.
func parseWhitelist(s string, log *slog.Logger, key string) map[int32]bool {
	out := map[int32]bool{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		c, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			log.Warn("auth: whitelist entry is not a request code, ignored", "key", key, "entry", p)
			continue
		}
		out[int32(c)] = true
	}
	return out
}

func load(path string) (*state, error) {
	st := &state{users: map[string]*jauth.User{}, acls: map[string]*jauth.Acl{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	var f fileForm
	if err := codec.UnmarshalBody(data, &f); err != nil {
		return nil, fmt.Errorf("auth: %s: %w", path, err)
	}
	for i := range f.Users {
		u, _, _ := jauth.FromUserInfo(&f.Users[i])
		st.users[u.Username] = &u
	}
	for i := range f.Acls {
		ps, err := jauth.FromAclInfo(&f.Acls[i])
		if err != nil {
			return nil, fmt.Errorf("auth: %s: acl of %s: %w", path, f.Acls[i].Subject, err)
		}
		st.acls[f.Acls[i].Subject] = &jauth.Acl{Subject: f.Acls[i].Subject, Policies: ps}
	}
	st.keySecrets(nil)
	return st, nil
}

// initUser is initAuthenticationUser: the super user, created once; then,
// as 5.3.3's initUser, the inner client credentials' account, a super user too.
func (m *Manager) initUser() error {
	if err := m.initFirstUser(); err != nil {
		return err
	}
	return m.initInnerUser()
}

func (m *Manager) initFirstUser() error {
	if strings.TrimSpace(m.cfg.InitAuthenticationUser) == "" {
		return nil
	}
	var in jauth.UserInfo
	if err := codec.UnmarshalBody([]byte(m.cfg.InitAuthenticationUser), &in); err != nil {
		return fmt.Errorf("auth: initAuthenticationUser: %w", err)
	}
	if in.Username == "" || in.Password == "" {
		return errors.New("auth: initAuthenticationUser needs a username and a password")
	}
	if m.User(in.Username) != nil {
		return nil
	}
	return m.update(func(st *state) error {
		st.users[in.Username] = &jauth.User{Username: in.Username, Password: in.Password, Super: true}
		return nil
	})
}

// initInnerUser creates the innerClientAuthenticationCredentials user when
// none has its name: other brokers accept what this one signs with it. A
// blank key fails the start, as Java's createUser does there.
func (m *Manager) initInnerUser() error {
	if strings.TrimSpace(m.cfg.InnerClientAuthenticationCredentials) == "" {
		return nil
	}
	ak, sk, _, err := m.InnerCredentials()
	if err != nil {
		return err
	}
	if m.User(ak) != nil {
		return nil
	}
	if strings.TrimSpace(ak) == "" || strings.TrimSpace(sk) == "" {
		return errors.New("auth: innerClientAuthenticationCredentials needs an accessKey and a secretKey")
	}
	return m.update(func(st *state) error {
		st.users[ak] = &jauth.User{Username: ak, Password: sk, Super: true}
		return nil
	})
}

// InnerCredentials is innerClientAuthenticationCredentials: the AK/SK the
// broker signs its own requests with (ok false when unset).
func (m *Manager) InnerCredentials() (accessKey, secretKey string, ok bool, err error) {
	return ParseInnerCredentials(m.cfg.InnerClientAuthenticationCredentials)
}

// ParseInnerCredentials reads innerClientAuthenticationCredentials' JSON
// (ok false when blank).
func ParseInnerCredentials(s string) (accessKey, secretKey string, ok bool, err error) {
	if strings.TrimSpace(s) == "" {
		return "", "", false, nil
	}
	var c struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	if err := codec.UnmarshalBody([]byte(s), &c); err != nil {
		return "", "", false, fmt.Errorf("auth: innerClientAuthenticationCredentials: %w", err)
	}
	return c.AccessKey, c.SecretKey, c.AccessKey != "", nil
}

// User returns the user named name, or nil. Never modify it.
func (m *Manager) User(name string) *jauth.User { return m.cur.Load().users[name] }

// Acl returns the ACL of subject key, or nil. Never modify it.
func (m *Manager) Acl(subject string) *jauth.Acl { return m.cur.Load().acls[subject] }

// update applies fn to a copy of the state, persists it and publishes it;
// nothing changes when fn or the write fails.
func (m *Manager) update(fn func(*state) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.cur.Load()
	st := &state{users: make(map[string]*jauth.User, len(old.users)), acls: make(map[string]*jauth.Acl, len(old.acls))}
	for k, v := range old.users {
		st.users[k] = v
	}
	for k, v := range old.acls {
		st.acls[k] = v
	}
	if err := fn(st); err != nil {
		return err
	}
	st.keySecrets(old)
	if err := m.save(st); err != nil {
		return err
	}
	m.cur.Store(st)
	return nil
}

func (m *Manager) save(st *state) error {
	var f fileForm
	f.Users, f.Acls = []jauth.UserInfo{}, []jauth.AclInfo{}
	for _, name := range sortedKeys(st.users) {
		f.Users = append(f.Users, jauth.ToUserInfo(st.users[name]))
	}
	for _, s := range sortedKeys(st.acls) {
		f.Acls = append(f.Acls, jauth.ToAclInfo(st.acls[s]))
	}
	data, err := codec.MarshalBodyIndent(&f, "  ")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o755); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	// The file holds passwords: readable by the broker's user only.
	if err := acl.WriteFileAtomicPerm(m.path, data, 0o600); err != nil {
		return fmt.Errorf("auth: write %s: %w", m.path, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Run writes the refusal log lines until ctx ends.
func (m *Manager) Run(ctx context.Context) { m.refusals.Run(ctx) }

// Authenticates reports whether requests are signature-checked (the hook
// then MACs whole bodies).
func (m *Manager) Authenticates() bool { return m.cfg.AuthenticationEnabled }
