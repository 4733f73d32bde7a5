package auth

import (
	"unsafe"

	jauth "rmqd/compat/auth"
)

// seedAlice adds user alice, allowed to publish to Topic:orders.
func seedAlice(st *state) error {
	st.users["alice"] = &jauth.User{Username: "alice", Password: "alicepw"}
	ps, err := jauth.FromAclInfo(&jauth.AclInfo{Policies: []jauth.PolicyInfo{{Entries: []jauth.PolicyEntryInfo{
		{Resource: "Topic:orders", Actions: []string{"Pub"}, Decision: "Allow"}}}}})
	st.acls["User:alice"] = &jauth.Acl{Subject: "User:alice", Policies: ps}
	return err
}

// unsafeString views b as a string without copying, as the codec's
// zero-copy header decoding does.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
