package auth

import (
	"errors"
	"strings"

	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
)

// MigrateV1 is migrateAuthFromV1Enabled (5.3's AuthMigrator): each ACL 1.0
// account whose access key names no user yet becomes a user (Super for admin
// accounts) with its secret key as password, plus an ACL made from its perms.
// An account whose user exists is left alone, user and ACL, so a restart
// imports nothing twice and never undoes changes made since. Accounts Java
// refuses (blank access or secret key) are logged and skipped. White remote
// addresses are dropped, as Java drops them (they only let unsigned requests
// in, so ACL 2.0 without them is stricter). All imports are one write.
func (m *Manager) MigrateV1(accounts []jacl.Account) error {
	var made []string
	err := m.update(func(st *state) error {
		made = made[:0]
		for i := range accounts {
			a := &accounts[i]
			if st.users[a.AccessKey] != nil {
				continue
			}
			switch {
			case strings.TrimSpace(a.AccessKey) == "":
				m.log.Error("auth: migrate ACL 1.0 account: username can not be blank")
				continue
			case strings.TrimSpace(a.SecretKey) == "":
				m.log.Error("auth: migrate ACL 1.0 account: password can not be blank", "accessKey", a.AccessKey)
				continue
			}
			st.users[a.AccessKey] = &jauth.User{Username: a.AccessKey, Password: a.SecretKey, Super: a.Admin}
			made = append(made, a.AccessKey)
			ps := v1Policies(a)
			if len(ps) == 0 {
				continue
			}
			// A leftover ACL of the subject is merged into, as createAcl does.
			key := jauth.SubjectKey(a.AccessKey)
			acl := &jauth.Acl{Subject: key}
			if old := st.acls[key]; old != nil {
				acl = old.Clone()
			}
			acl.Merge(ps)
			st.acls[key] = acl
		}
		if len(made) == 0 {
			return errNothingToMigrate // no rewrite of auth.json at every start
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNothingToMigrate) {
		return err
	}
	if len(made) > 0 {
		m.log.Info("auth: migrated ACL 1.0 accounts", "users", made)
	}
	return nil
}

var errNothingToMigrate = errors.New("auth: no ACL 1.0 account to migrate")

// v1Policies is AuthMigrator.createAcl: topicPerms then groupPerms as one
// Custom policy (in file order, duplicates kept), defaultTopicPerm then
// defaultGroupPerm as the Default policy on Topic:* and Group:*. No entry has
// source addresses.
func v1Policies(a *jacl.Account) []jauth.Policy {
	var custom, def []jauth.Entry
	for _, list := range []struct {
		perms []string
		res   func(string) jauth.Resource
	}{{a.TopicPerms, jauth.Topic}, {a.GroupPerms, jauth.Group}} {
		for _, tp := range list.perms {
			// StringUtils.split on '=': empty pieces vanish; "a=b=c" is skipped.
			parts := strings.FieldsFunc(tp, func(r rune) bool { return r == '=' })
			if len(parts) != 2 {
				continue
			}
			custom = append(custom, v1Entry(list.res(javaTrim(parts[0])), javaTrim(parts[1])))
		}
	}
	if strings.TrimSpace(a.DefaultTopicPerm) != "" {
		def = append(def, v1Entry(jauth.Resource{Type: jauth.TypeTopic, Pattern: jauth.PatAny}, javaTrim(a.DefaultTopicPerm)))
	}
	if strings.TrimSpace(a.DefaultGroupPerm) != "" {
		def = append(def, v1Entry(jauth.Resource{Type: jauth.TypeGroup, Pattern: jauth.PatAny}, javaTrim(a.DefaultGroupPerm)))
	}
	var out []jauth.Policy
	if len(custom) > 0 {
		out = append(out, jauth.Policy{Type: jauth.PolicyCust, Entries: custom})
	}
	if len(def) > 0 {
		out = append(out, jauth.Policy{Type: jauth.PolicyDef, Entries: def})
	}
	return out
}

// v1Entry is parseActions/parseDecision. A permission that is none of PUB,
// SUB, PUB|SUB, SUB|PUB, DENY becomes All Deny: ACL 1.0 read it as DENY, and
// Java's migrator's All Allow would grant what the old file refused.
func v1Entry(r jauth.Resource, perm string) jauth.Entry {
	e := jauth.Entry{Resource: r}
	switch perm {
	case "PUB":
		e.Actions = jauth.ActPub
	case "SUB":
		e.Actions = jauth.ActSub
	case "PUB|SUB", "SUB|PUB":
		e.Actions = jauth.ActPub | jauth.ActSub
	default: // DENY, blank, or unknown
		e.Actions, e.Deny = jauth.ActAll, true
	}
	return e
}

// javaTrim is StringUtils.trim: control characters and spaces off both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
