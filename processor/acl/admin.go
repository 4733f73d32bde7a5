package acl

import (
	"context"
	"fmt"
	"path/filepath"
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
			out = append(out, strings.Clone(p)) // the request's frame is recycled
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
		err = m.edit(func(files []aclFile) (int, error) {
			// The file that holds the account, else the main file (last).
			if fi, ai := findAccount(files, u.AccessKey); fi >= 0 {
				files[fi].data.Accounts[ai].Merge(&u, whiteSet, topicsSet, groupsSet)
				return fi, nil
			}
			last := len(files) - 1
			files[last].data.Accounts = append(files[last].data.Accounts, u)
			return last, nil
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
	err := m.edit(func(files []aclFile) (int, error) {
		fi, ai := findAccount(files, ak)
		if fi < 0 {
			return 0, jacl.JavaError(fmt.Sprintf("The accessKey[%s] corresponding to accessConfig has been deleted failed.", ak))
		}
		accts := files[fi].data.Accounts
		files[fi].data.Accounts = append(accts[:ai], accts[ai+1:]...)
		return fi, nil
	})
	if err != nil {
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
	} else {
		target, _ := req.Ext.Get("aclFileFullPath")
		target = strings.Clone(target)
		err = m.edit(func(files []aclFile) (int, error) {
			i := len(files) - 1 // the main file unless another is named
			if target != "" {
				i = -1
				for j := range files {
					if files[j].path == filepath.Clean(target) {
						i = j
					}
				}
				if i < 0 {
					return 0, fmt.Errorf("aclFileFullPath %s is not one of the broker's ACL files", target)
				}
			}
			files[i].data.GlobalWhiteRemoteAddresses = addrs
			return i, nil
		})
	}
	if err != nil {
		m.log.Warn("acl: global white addresses not updated", "err", err)
		return codec.NewResponse(req, RespUpdateGlobalWhiteAddrsFail, err.Error())
	}
	m.log.Info("acl: global white addresses updated", "addrs", addrs)
	return codec.NewResponse(req, codec.RespSuccess, "")
}

// findAccount locates the entry in force for accessKey (the first, in file
// order), or -1.
func findAccount(files []aclFile, accessKey string) (file, index int) {
	for fi := range files {
		for ai := range files[fi].data.Accounts {
			if files[fi].data.Accounts[ai].AccessKey == accessKey {
				return fi, ai
			}
		}
	}
	return -1, -1
}

func versionJSON(v jacl.FileVersion) string {
	dv := codec.DataVersion{Counter: v.Counter, Timestamp: v.Timestamp}
	return string(dv.AppendJSON(nil))
}

// aclInfo is GET_BROKER_CLUSTER_ACL_INFO: the main file's version, and every
// file's in allAclFileVersion.
func (m *Manager) aclInfo(req *codec.RemotingCommand, id BrokerIdentity) *codec.RemotingCommand {
	m.mu.Lock()
	var ver string
	all := []byte{'{'}
	for i, f := range m.loaded {
		v := versionJSON(f.data.Version())
		if f.path == m.path {
			ver = v
		}
		if i > 0 {
			all = append(all, ',')
		}
		all = append(all, jsonString(f.path)+":"+v...)
	}
	all = append(all, '}')
	m.mu.Unlock()
	cluster, name, addr := id()
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext = codec.ExtFields{{Key: "version", Value: ver}, {Key: "allAclFileVersion", Value: string(all)},
		{Key: "brokerName", Value: name}, {Key: "brokerAddr", Value: addr}, {Key: "clusterName", Value: cluster}}
	return resp
}

func jsonString(s string) string {
	b, _ := codec.MarshalBody(s)
	return string(b)
}

// aclConfigBody is GetBrokerClusterAclConfigResponseBody.
type aclConfigBody struct {
	GlobalWhiteAddrs   []string       `json:"globalWhiteAddrs"`
	PlainAccessConfigs []jacl.Account `json:"plainAccessConfigs"`
}

func (m *Manager) aclConfig(req *codec.RemotingCommand) *codec.RemotingCommand {
	_, files, err := m.Files()
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error())
	}
	// As getAllAclConfig: every file's white addresses, each access key once.
	body := aclConfigBody{GlobalWhiteAddrs: []string{}, PlainAccessConfigs: []jacl.Account{}}
	seen := map[string]bool{}
	for _, f := range files {
		body.GlobalWhiteAddrs = append(body.GlobalWhiteAddrs, f.GlobalWhiteRemoteAddresses...)
		for _, a := range f.Accounts {
			if !seen[a.AccessKey] {
				seen[a.AccessKey] = true
				body.PlainAccessConfigs = append(body.PlainAccessConfigs, a)
			}
		}
	}
	b, err := codec.MarshalBody(body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error())
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b
	return resp
}
