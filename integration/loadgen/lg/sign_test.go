package lg

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"rmqd/codec"
)

// TestSignMatchesJava checks the load generator's signer against the vectors the real AclClientRPCHook printed
// (compat/acl/testdata; the cases without a security token, which the load generator never sends).
func TestSignMatchesJava(t *testing.T) {
	fh, err := os.Open("../../../compat/acl/testdata/java_signatures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var v struct {
			Name          string      `json:"name"`
			AccessKey     []byte      `json:"accessKey"`
			SecretKey     []byte      `json:"secretKey"`
			SecurityToken []byte      `json:"securityToken"`
			Fields        [][2][]byte `json:"fields"`
			Body          []byte      `json:"body"`
			Signature     string      `json:"signature"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if v.SecurityToken != nil || !ascii(v.Fields) {
			continue
		}
		req := codec.NewRequest(0)
		for _, f := range v.Fields {
			req.Ext.Set(string(f[0]), string(f[1]))
		}
		req.Body = v.Body
		(&Credentials{AccessKey: string(v.AccessKey), SecretKey: string(v.SecretKey)}).sign(req)
		if got, _ := req.Ext.Get("Signature"); got != v.Signature {
			t.Errorf("%s: signature %s, Java %s", v.Name, got, v.Signature)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("only %d vectors checked", n)
	}
}

func ascii(fields [][2][]byte) bool {
	for _, f := range fields {
		for _, c := range f[0] {
			if c >= 0x80 {
				return false
			}
		}
	}
	return true
}
