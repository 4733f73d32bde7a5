package acl

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	"rmqd/remoting"
)

// The ACL 1.0 admin request codes (RequestCode) and their failure answers
// (ResponseCode).
const (
	ReqUpdateAndCreateAclConfig    int32 = 50 // UPDATE_AND_CREATE_ACL_CONFIG
	ReqDeleteAclConfig             int32 = 51 // DELETE_ACL_CONFIG
	ReqGetBrokerClusterAclInfo     int32 = 52 // GET_BROKER_CLUSTER_ACL_INFO
	ReqUpdateGlobalWhiteAddrs      int32 = 53 // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
	ReqGetBrokerClusterAclConfig   int32 = 54 // GET_BROKER_CLUSTER_ACL_CONFIG
	RespUpdateAndCreateAclFailed   int32 = 209
	RespDeleteAclConfigFailed      int32 = 210
	RespUpdateGlobalWhiteAddrsFail int32 = 211
)

// BrokerIdentity is what GET_BROKER_CLUSTER_ACL_INFO tells about the broker.
type BrokerIdentity func() (clusterName, brokerName, brokerAddr string)

// notEnabled is the answer of the admin codes on a broker without aclEnable
// (AdminBrokerProcessor.ensureAclEnabled).
const notEnabled = "The broker does not enable acl."

// Handlers returns the ACL admin processors. m may be nil (aclEnable=false):
// the codes are then answered with their failure code, as Java 5.x does.
func Handlers(m *Manager, id BrokerIdentity) map[int32]remoting.Processor {
	f := func(fn func(*codec.RemotingCommand) *codec.RemotingCommand, failCode int32) remoting.Processor {
		return remoting.ProcessorFunc(func(_ context.Context, _ remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			if m == nil {
				return codec.NewResponse(req, failCode, notEnabled), nil
			}
			return fn(req), nil
		})
	}
	return map[int32]remoting.Processor{
		ReqUpdateAndCreateAclConfig:  f(m.updateAccount, RespUpdateAndCreateAclFailed),
		ReqDeleteAclConfig:           f(m.deleteAccount, RespDeleteAclConfigFailed),
		ReqUpdateGlobalWhiteAddrs:    f(m.updateGlobalWhiteAddrs, RespUpdateGlobalWhiteAddrsFail),
		ReqGetBrokerClusterAclInfo:   f(func(r *codec.RemotingCommand) *codec.RemotingCommand { return m.aclInfo(r, id) }, codec.RespSystemError),
		ReqGetBrokerClusterAclConfig: f(m.aclConfig, codec.RespSystemError),
	}
}

// splitList is UtilAll.split(s, ","), except that an empty string is an empty
// list (Java makes it [""] and then refuses it).
func splitList(s string, ok bool) ([]string, bool) {
	if !ok {
		return nil, false
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, true
}

func (m *Manager) updateAccount(req *codec.RemotingCommand) *codec.RemotingCommand {
	var u jacl.Account
	u.AccessKey, _ = req.Ext.Get("accessKey")
	u.SecretKey, _ = req.Ext.Get("secretKey")
	white, whiteSet := req.Ext.Get("whiteRemoteAddress")
	u.WhiteRemoteAddress = white
	u.Admin, _ = req.Ext.GetBool("admin")
	u.DefaultTopicPerm, _ = req.Ext.Get("defaultTopicPerm")
	u.DefaultGroupPerm, _ = req.Ext.Get("defaultGroupPerm")
	var topicsSet, groupsSet bool
	u.TopicPerms, topicsSet = splitList(req.Ext.Get("topicPerms"))
	u.GroupPerms, groupsSet = splitList(req.Ext.Get("groupPerms"))
	u.AccessKey, u.SecretKey = strings.Clone(u.AccessKey), strings.Clone(u.SecretKey)
	u.WhiteRemoteAddress = strings.Clone(u.WhiteRemoteAddress)
	u.DefaultTopicPerm, u.DefaultGroupPerm = strings.Clone(u.DefaultTopicPerm), strings.Clone(u.DefaultGroupPerm)
	err := jacl.CheckAccount(&u)
	if err == nil {
		err = m.edit(func(f *jacl.File) error {
			for i := range f.Accounts {
				if f.Accounts[i].AccessKey == u.AccessKey {
					f.Accounts[i].Merge(&u, whiteSet, topicsSet, groupsSet)
					return nil
				}
			}
			f.Accounts = append(f.Accounts, u)
			return nil
		})
	}
	if err != nil {
		m.log.Warn("acl: account not updated", "accessKey", u.AccessKey, "err", err)
		return codec.NewResponse(req, RespUpdateAndCreateAclFailed, err.Error())
	}
	m.log.Info("acl: account updated", "accessKey", u.AccessKey, "admin", u.Admin)
	return codec.NewResponse(req, codec.RespSuccess, "")
}

func (m *Manager) deleteAccount(req *codec.RemotingCommand) *codec.RemotingCommand {
	ak, _ := req.Ext.Get("accessKey")
	ak = strings.Clone(ak)
	found := false
	err := m.edit(func(f *jacl.File) error {
		for i := range f.Accounts {
			if f.Accounts[i].AccessKey == ak {
				f.Accounts = append(f.Accounts[:i], f.Accounts[i+1:]...)
				found = true
				return nil
			}
		}
		return jacl.JavaError(fmt.Sprintf("The accessKey[%s] corresponding to accessConfig has been deleted failed.", ak))
	})
	if err != nil || !found {
		m.log.Warn("acl: account not deleted", "accessKey", ak, "err", err)
		return codec.NewResponse(req, RespDeleteAclConfigFailed, err.Error())
	}
	m.log.Info("acl: account deleted", "accessKey", ak)
	return codec.NewResponse(req, codec.RespSuccess, "")
}

func (m *Manager) updateGlobalWhiteAddrs(req *codec.RemotingCommand) *codec.RemotingCommand {
	raw, ok := req.Ext.Get("globalWhiteAddrs")
	addrs, _ := splitList(raw, true)
	var err error
	if !ok {
		err = jacl.JavaError("The globalWhiteAddresses[null] has been updated failed.")
	} else if p, _ := req.Ext.Get("aclFileFullPath"); p != "" && p != m.path {
		// rmqd keeps one ACL file; Java 5.x can address each of several.
		err = fmt.Errorf("aclFileFullPath %s is not the ACL file of this broker (%s)", p, m.path)
	} else {
		err = m.edit(func(f *jacl.File) error {
			f.GlobalWhiteRemoteAddresses = addrs
			return nil
		})
	}
	if err != nil {
		m.log.Warn("acl: global white addresses not updated", "err", err)
		return codec.NewResponse(req, RespUpdateGlobalWhiteAddrsFail, err.Error())
	}
	m.log.Info("acl: global white addresses updated", "addrs", addrs)
	return codec.NewResponse(req, codec.RespSuccess, "")
}

func (m *Manager) aclInfo(req *codec.RemotingCommand, id BrokerIdentity) *codec.RemotingCommand {
	v := m.cur.Load().Version()
	dv := codec.DataVersion{Counter: v.Counter, Timestamp: v.Timestamp}
	ver := string(dv.AppendJSON(nil))
	all := `{` + jsonString(m.path) + `:` + ver + `}`
	cluster, name, addr := id()
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext = codec.ExtFields{{Key: "version", Value: ver}, {Key: "allAclFileVersion", Value: all},
		{Key: "brokerName", Value: name}, {Key: "brokerAddr", Value: addr}, {Key: "clusterName", Value: cluster}}
	return resp
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// aclConfigBody is GetBrokerClusterAclConfigResponseBody.
type aclConfigBody struct {
	GlobalWhiteAddrs   []string       `json:"globalWhiteAddrs"`
	PlainAccessConfigs []jacl.Account `json:"plainAccessConfigs"`
}

func (m *Manager) aclConfig(req *codec.RemotingCommand) *codec.RemotingCommand {
	f, err := m.File()
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error())
	}
	body := aclConfigBody{GlobalWhiteAddrs: f.GlobalWhiteRemoteAddresses, PlainAccessConfigs: f.Accounts}
	if body.GlobalWhiteAddrs == nil {
		body.GlobalWhiteAddrs = []string{}
	}
	if body.PlainAccessConfigs == nil {
		body.PlainAccessConfigs = []jacl.Account{}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error())
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b
	return resp
}
