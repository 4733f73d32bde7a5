package acl

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Account is one entry of accounts in plain_acl.yml (Java's PlainAccessConfig).
type Account struct {
	AccessKey          string   `yaml:"accessKey" json:"accessKey"`
	Admin              bool     `yaml:"admin" json:"admin"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm,omitempty" json:"defaultGroupPerm,omitempty"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm,omitempty" json:"defaultTopicPerm,omitempty"`
	GroupPerms         []string `yaml:"groupPerms,omitempty" json:"groupPerms,omitempty"`
	SecretKey          string   `yaml:"secretKey" json:"secretKey"`
	TopicPerms         []string `yaml:"topicPerms,omitempty" json:"topicPerms,omitempty"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress,omitempty" json:"whiteRemoteAddress,omitempty"`
}

// FileVersion is one dataVersion entry of plain_acl.yml.
type FileVersion struct {
	Counter   int64 `yaml:"counter"`
	Timestamp int64 `yaml:"timestamp"`
}

// File is plain_acl.yml (Java's PlainAccessData). Keys are written in the
// order Java's SnakeYAML dumps them.
type File struct {
	Accounts                   []Account     `yaml:"accounts,omitempty"`
	DataVersion                []FileVersion `yaml:"dataVersion,omitempty"`
	GlobalWhiteRemoteAddresses []string      `yaml:"globalWhiteRemoteAddresses,omitempty"`
}

// ParseFile reads plain_acl.yml. An empty document is an empty File. Unknown
// keys are ignored (SnakeYAML would refuse them).
func ParseFile(b []byte) (*File, error) {
	var f File
	if len(bytes.TrimSpace(b)) == 0 {
		return &f, nil
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("plain acl yaml: %w", err)
	}
	return &f, nil
}

// Marshal writes f as YAML that Java's PlainPermissionManager reads back.
func (f *File) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("plain acl yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("plain acl yaml: %w", err)
	}
	return buf.Bytes(), nil
}

// Version is the file's dataVersion (zero when it has none).
func (f *File) Version() FileVersion {
	if len(f.DataVersion) == 0 {
		return FileVersion{}
	}
	return f.DataVersion[0]
}

// NextVersion bumps the dataVersion as updateAclConfigFileVersion does.
func (f *File) NextVersion(nowMillis int64) {
	v := f.Version()
	f.DataVersion = []FileVersion{{Counter: v.Counter + 1, Timestamp: nowMillis}}
}

// Key length minimums of AclConstants: both must be longer than 6.
const (
	accessKeyMinLength = 6
	secretKeyMinLength = 6
)

// CheckAccount is checkPlainAccessConfig plus Permission.checkResourcePerms.
func CheckAccount(a *Account) error {
	if len(a.AccessKey) <= accessKeyMinLength || len(a.SecretKey) <= secretKeyMinLength {
		return javaErr("The accessKey=%s and secretKey=%s cannot be null and length should longer than 6", a.AccessKey, maskSecret(a.SecretKey))
	}
	for _, list := range [][]string{a.TopicPerms, a.GroupPerms} {
		for _, r := range list {
			name, perm, ok := splitResourcePerm(r)
			if !ok || name == "" {
				return javaErr("Parse Resource format error for %s.\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB", r)
			}
			if perm != "DENY" && ParsePerm(perm) == Deny {
				return javaErr("Parse resource permission error for %s.\nThe expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.", r)
			}
		}
	}
	return nil
}

// maskSecret keeps secrets out of error texts that reach the wire and logs
// (Java prints them; rmqd does not).
func maskSecret(s string) string {
	if s == "" {
		return "null"
	}
	return "***"
}

// splitResourcePerm is StringUtils.split(resource, "=") expecting two items.
func splitResourcePerm(r string) (name, perm string, ok bool) {
	var items []string
	for _, p := range strings.Split(r, "=") {
		if p != "" {
			items = append(items, p)
		}
	}
	if len(items) != 2 {
		return "", "", false
	}
	return strings.TrimSpace(items[0]), strings.TrimSpace(items[1]), true
}

// Merge applies an update to an existing account as createAclAccessConfigMap
// does: the secret key and default perms only when given, the white address and
// resource lists when not nil, admin always.
func (a *Account) Merge(u *Account, whiteSet, topicsSet, groupsSet bool) {
	a.AccessKey = u.AccessKey
	if u.SecretKey != "" {
		a.SecretKey = u.SecretKey
	}
	if whiteSet {
		a.WhiteRemoteAddress = u.WhiteRemoteAddress
	}
	a.Admin = u.Admin
	if u.DefaultTopicPerm != "" {
		a.DefaultTopicPerm = u.DefaultTopicPerm
	}
	if u.DefaultGroupPerm != "" {
		a.DefaultGroupPerm = u.DefaultGroupPerm
	}
	if topicsSet {
		a.TopicPerms = u.TopicPerms
	}
	if groupsSet {
		a.GroupPerms = u.GroupPerms
	}
}
