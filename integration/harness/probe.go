package harness

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"
)

// This file is a deliberately tiny remoting client (JSON headers only) used to tell when a server is ready.
// It does not import rmqd's codec or remoting: the harness must judge rmqd from outside, and must work
// while those packages are being written.

const (
	codeGetRouteInfoByTopic = 105 // GET_ROUTEINFO_BY_TOPIC
	probeVersion            = 479 // V5_3_3: a modern client, gets standard-JSON route bodies
)

type probeHeader struct {
	Code      int               `json:"code"`
	Language  string            `json:"language"`
	Version   int               `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int               `json:"flag"`
	Remark    string            `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
}

// probeRequest sends one JSON-header request to addr and returns the response header and body.
func probeRequest(ctx context.Context, addr string, code int, ext map[string]string) (probeHeader, []byte, error) {
	return probeRequestBody(ctx, addr, code, ext, nil)
}

// probeRequestBody is probeRequest with a request body. A server in tls.server.mode=enforcing drops the
// plain request: it is sent again over TLS (any certificate: the servers under test are self-signed).
func probeRequestBody(ctx context.Context, addr string, code int, ext map[string]string, body []byte) (probeHeader, []byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return probeHeader{}, nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	resp, rb, err := probeOn(ctx, conn, addr, code, ext, body)
	if err == nil || ctx.Err() != nil {
		return resp, rb, err
	}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	tc, terr := (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(hctx, "tcp", addr)
	if terr != nil {
		return probeHeader{}, nil, err // the plain attempt's error says more
	}
	if resp, rb, terr = probeOn(ctx, tc, addr, code, ext, body); terr != nil {
		return probeHeader{}, nil, err
	}
	return resp, rb, nil
}

// probeOn sends the request on conn and reads the answer; it closes conn.
func probeOn(ctx context.Context, conn net.Conn, addr string, code int, ext map[string]string, body []byte) (probeHeader, []byte, error) {
	defer conn.Close()
	deadline := time.Now().Add(3 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)

	hdr, err := json.Marshal(probeHeader{Code: code, Language: "JAVA", Version: probeVersion, Opaque: 1, ExtFields: ext})
	if err != nil {
		return probeHeader{}, nil, fmt.Errorf("encode header: %w", err)
	}
	frame := make([]byte, 8+len(hdr)+len(body))
	binary.BigEndian.PutUint32(frame[0:], uint32(4+len(hdr)+len(body)))
	binary.BigEndian.PutUint32(frame[4:], uint32(len(hdr))) // top byte 0 = JSON
	copy(frame[8:], hdr)
	copy(frame[8+len(hdr):], body)
	if _, err := conn.Write(frame); err != nil {
		return probeHeader{}, nil, fmt.Errorf("write to %s: %w", addr, err)
	}

	var lenBuf [4]byte
	if _, err := io.ReadFull(conn, lenBuf[:]); err != nil {
		return probeHeader{}, nil, fmt.Errorf("read from %s: %w", addr, err)
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n < 4 || n > 16<<20 {
		return probeHeader{}, nil, fmt.Errorf("response from %s: frame length %d", addr, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return probeHeader{}, nil, fmt.Errorf("read from %s: %w", addr, err)
	}
	word := binary.BigEndian.Uint32(buf[0:4])
	if word>>24 != 0 {
		return probeHeader{}, nil, fmt.Errorf("response from %s: serialize type %d, want JSON (0)", addr, word>>24)
	}
	hlen := int(word & 0xFFFFFF)
	if 4+hlen > len(buf) {
		return probeHeader{}, nil, fmt.Errorf("response from %s: header length %d beyond frame %d", addr, hlen, n)
	}
	var resp probeHeader
	if err := json.Unmarshal(buf[4:4+hlen], &resp); err != nil {
		return probeHeader{}, nil, fmt.Errorf("response from %s: header %q: %w", addr, buf[4:4+hlen], err)
	}
	return resp, buf[4+hlen:], nil
}

// routeBody is the part of TopicRouteData the readiness check reads.
type routeBody struct {
	BrokerDatas []struct {
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// routeHasBroker asks the name server for the route of topic and reports whether brokerAddr is its master.
func routeHasBroker(ctx context.Context, namesrv, topic, brokerAddr string) (bool, string, error) {
	return routeHasBrokerID(ctx, namesrv, topic, brokerAddr, "0")
}

// routeHasBrokerID is routeHasBroker for the broker id given ("0" master, "1"... slaves).
func routeHasBrokerID(ctx context.Context, namesrv, topic, brokerAddr, id string) (bool, string, error) {
	resp, body, err := probeRequest(ctx, namesrv, codeGetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return false, "", err
	}
	if resp.Code != 0 {
		return false, fmt.Sprintf("route %s: code %d %s", topic, resp.Code, resp.Remark), nil
	}
	var r routeBody
	if err := json.Unmarshal(body, &r); err != nil {
		return false, fmt.Sprintf("route %s: body %.200q: %v", topic, body, err), nil
	}
	for _, bd := range r.BrokerDatas {
		if bd.BrokerAddrs[id] == brokerAddr {
			return true, "", nil
		}
	}
	return false, fmt.Sprintf("route %s: %s not broker %s in %.300s", topic, brokerAddr, id, body), nil
}

// portOpen reports whether something accepts TCP connections on addr.
func portOpen(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
