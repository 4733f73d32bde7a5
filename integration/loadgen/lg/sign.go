package lg

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"sort"

	"rmqd/codec"
)

// Credentials sign requests as Java's AclClientRPCHook does (ACL 1.0 and ACL 2.0 share the signature):
// AccessKey joins the header fields, then Signature = base64(HmacSHA1(secretKey, values sorted by key ++ body)).
// Written here from the hook's description rather than taken from compat/acl, so that the broker's verifier is
// checked against a second implementation.
type Credentials struct {
	AccessKey string
	SecretKey string
}

// sign adds AccessKey and Signature to req, whose header fields must all be in req.Ext.
func (c *Credentials) sign(req *codec.RemotingCommand) {
	req.Ext.Del("Signature")
	req.Ext.Set("AccessKey", c.AccessKey)
	keys := make([]string, 0, len(req.Ext))
	vals := make(map[string]string, len(req.Ext))
	for _, f := range req.Ext {
		if _, seen := vals[f.Key]; !seen {
			keys = append(keys, f.Key)
		}
		vals[f.Key] = f.Value
	}
	sort.Strings(keys) // header keys are ASCII: byte order is Java's String order
	mac := hmac.New(sha1.New, []byte(c.SecretKey))
	for _, k := range keys {
		mac.Write([]byte(vals[k]))
	}
	mac.Write(req.Body)
	req.Ext.Set("Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// signFrame re-encodes an encoded request (frame, from Encode) into out with its typed header turned into
// plain fields and signed: the hook signs the fields Java's client puts on the wire, so they must exist as
// such first. The decoded fields may alias frame, hence a second buffer.
func (c *Credentials) signFrame(out, frame []byte, tmp *codec.RemotingCommand) ([]byte, error) {
	if err := codec.DecodeCommand(frame[4:], tmp); err != nil {
		return out, fmt.Errorf("lg: sign: %w", err)
	}
	c.sign(tmp)
	return tmp.Encode(out[:0]), nil
}
