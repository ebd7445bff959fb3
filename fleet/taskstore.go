package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// TaskStoreOptions bounds a fleet's task store. The bounds are the fleet's, shared by its
// instances: every instance must give the same. The zero value is ready to use.
type TaskStoreOptions struct {
	// MaxTasks bounds the tasks kept at once, expired ones not counted (default 1024).
	MaxTasks int
	// MaxPerPrincipal bounds the tasks one principal may have at once (default 256).
	MaxPerPrincipal int
	// MaxBytes bounds the bytes of results, questions and answers kept, in all (default 64
	// MiB), counted as the memory store counts them.
	MaxBytes int
	// Now is the clock (default time.Now) that stamps tasks and decides when they expire.
	// The instances' clocks must agree to well within the tasks' TTLs (NTP does).
	Now func() time.Time
}

// TaskStore is an mcp.TaskStore on Redis, so that any instance of the fleet answers
// tasks/get for a task made on another (the task still runs where it was made). Its bounds
// and its semantics are the memory store's; each record is also given a Redis expiry a
// minute past its TTL, so that what no call sweeps still goes.
//
// Every call is one script, run atomically by Redis. Update reads the record, runs fn here,
// and writes the result only if no other update came between (else it reads again and runs
// fn again): fn runs under no lock, and may run more than once.
type TaskStore struct {
	r    *Redis
	opts TaskStoreOptions
	keys []string // the store's bookkeeping keys; the task's own comes first in each call
}

var _ mcp.TaskStore = (*TaskStore)(nil)

// expiryGrace is how long past its TTL a task's key outlives it in Redis: the store's clock
// decides expiry, and Redis's may differ from it a little.
const expiryGrace = time.Minute

// TaskStore returns the fleet's task store. opts may be nil.
func (r *Redis) TaskStore(opts *TaskStoreOptions) *TaskStore {
	s := &TaskStore{r: r}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxTasks <= 0 {
		s.opts.MaxTasks = 1024
	}
	if s.opts.MaxPerPrincipal <= 0 {
		s.opts.MaxPerPrincipal = 256
	}
	if s.opts.MaxBytes <= 0 {
		s.opts.MaxBytes = 64 << 20
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	p := r.opts.Prefix + "tasks:"
	// expiries: a sorted set of task ids by expiry (µs); meta: id → "size:principal";
	// counts: principal → tasks; bytes: the sum of sizes.
	s.keys = []string{p + "expiries", p + "meta", p + "counts", p + "bytes"}
	return s
}

func (s *TaskStore) taskKey(id string) string { return s.r.opts.Prefix + "task:" + id }

// call runs script on the task id's key and the bookkeeping keys.
func (s *TaskStore) call(ctx context.Context, script *redis.Script, id string, args ...any) (any, error) {
	keys := append([]string{s.taskKey(id)}, s.keys...)
	return script.Run(ctx, s.r.client, keys, append([]any{s.r.opts.Prefix + "task:", id}, args...)...).Result()
}

// taskLua is what the scripts share. KEYS: the task, expiries, meta, counts, bytes. ARGV[1]
// is the prefix of task keys, ARGV[2] the task's id. Times are µs since the epoch, passed as
// strings and only compared as numbers, since Lua prints large numbers inexactly.
const taskLua = `
local task, expiries, meta, counts, bytes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local prefix, id = ARGV[1], ARGV[2]

local function drop(id)
  local m = redis.call('HGET', meta, id)
  if m then
    local size, principal = string.match(m, '^(%d+):(.*)$')
    redis.call('DECRBY', bytes, size)
    if redis.call('HINCRBY', counts, principal, -1) <= 0 then redis.call('HDEL', counts, principal) end
    redis.call('HDEL', meta, id)
  end
  redis.call('ZREM', expiries, id)
  redis.call('DEL', prefix .. id)
end

local function sweep(now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', expiries, '-inf', now)) do drop(id) end
end

local function expired(x, now)
  return x ~= '' and tonumber(x) <= tonumber(now)
end

local function usedBytes() return tonumber(redis.call('GET', bytes) or '0') end
`

// createTask: ARGV[3] principal, [4] now, [5] expiry or ”, [6] score, [7] size, [8] record,
// [9] max tasks, [10] max per principal, [11] max bytes, [12] Redis expiry in ms or ”.
var createTask = redis.NewScript(taskLua + `
local principal, now, size = ARGV[3], ARGV[4], tonumber(ARGV[7])
if redis.call('EXISTS', task) == 1 then return 'exists' end
-- Redis expired the key before the store's clock did: let its bookkeeping go too.
if redis.call('HEXISTS', meta, id) == 1 then drop(id) end
local function full()
  return redis.call('ZCARD', expiries) >= tonumber(ARGV[9])
    or tonumber(redis.call('HGET', counts, principal) or '0') >= tonumber(ARGV[10])
    or usedBytes() + size > tonumber(ARGV[11])
end
if full() then sweep(now) end
if full() then return 'full' end
redis.call('HSET', task, 'p', principal, 'x', ARGV[5], 'v', '1', 'r', ARGV[8])
if ARGV[12] ~= '' then redis.call('PEXPIRE', task, ARGV[12]) end
redis.call('ZADD', expiries, ARGV[6], id)
redis.call('HSET', meta, id, ARGV[7] .. ':' .. principal)
redis.call('HINCRBY', counts, principal, 1)
redis.call('INCRBY', bytes, ARGV[7])
return 'ok'`)

// getTask: ARGV[3] principal, [4] now. Returns {version, record}, or nil for a task the
// principal does not have (dropping it if it has expired).
var getTask = redis.NewScript(taskLua + `
local t = redis.call('HMGET', task, 'p', 'x', 'v', 'r')
if not t[3] or t[1] ~= ARGV[3] then return nil end
if expired(t[2], ARGV[4]) then drop(id) return nil end
return {t[3], t[4]}`)

// commitTask: ARGV[3] principal, [4] now, [5] the version read, [6] size, [7] record, [8]
// max bytes. Writes the record if the task is as it was read.
var commitTask = redis.NewScript(taskLua + `
local principal, now, size = ARGV[3], ARGV[4], tonumber(ARGV[6])
local t = redis.call('HMGET', task, 'p', 'x', 'v')
if not t[3] or t[1] ~= principal then return 'gone' end
if expired(t[2], now) then drop(id) return 'gone' end
if t[3] ~= ARGV[5] then return 'moved' end
local old = tonumber(string.match(redis.call('HGET', meta, id) or '0:', '^(%d+):') or '0')
local grow = size - old
if grow > 0 and usedBytes() + grow > tonumber(ARGV[8]) then
  sweep(now)
  if usedBytes() + grow > tonumber(ARGV[8]) then return 'full' end
end
redis.call('HSET', task, 'v', tostring(tonumber(t[3]) + 1), 'r', ARGV[7])
redis.call('HSET', meta, id, ARGV[6] .. ':' .. principal)
redis.call('INCRBY', bytes, grow)
return 'ok'`)

// Create implements mcp.TaskStore.
func (s *TaskStore) Create(ctx context.Context, t *mcp.TaskRecord) error {
	now := s.opts.Now()
	rec := *t
	rec.CreatedAt, rec.UpdatedAt = now, now
	enc, err := encodeTask(&rec)
	if err != nil {
		return err
	}
	expiry, score, redisTTL := "", "+inf", ""
	if rec.TTL > 0 {
		expiry = micros(now.Add(rec.TTL))
		score = expiry
		redisTTL = strconv.FormatInt((rec.TTL + expiryGrace).Milliseconds(), 10)
	}
	res, err := s.call(ctx, createTask, rec.ID, rec.Principal, micros(now), expiry, score,
		sizeOf(&rec), enc, s.opts.MaxTasks, s.opts.MaxPerPrincipal, s.opts.MaxBytes, redisTTL)
	if err != nil {
		return s.r.wrap(ctx, "creating a task", err)
	}
	switch res {
	case "exists":
		return errors.New("fleet: a task with this id exists already; draw another id")
	case "full":
		return mcp.ErrTaskLimit
	}
	t.CreatedAt, t.UpdatedAt = now, now
	return nil
}

// Get implements mcp.TaskStore.
func (s *TaskStore) Get(ctx context.Context, principal, id string) (*mcp.TaskRecord, error) {
	rec, _, err := s.get(ctx, principal, id)
	return rec, err
}

// get returns the task and the version it was read at.
func (s *TaskStore) get(ctx context.Context, principal, id string) (*mcp.TaskRecord, string, error) {
	res, err := s.call(ctx, getTask, id, principal, micros(s.opts.Now()))
	if err == redis.Nil {
		return nil, "", mcp.ErrTaskNotFound
	}
	if err != nil {
		return nil, "", s.r.wrap(ctx, "reading a task", err)
	}
	pair, _ := res.([]any)
	if len(pair) != 2 {
		return nil, "", fmt.Errorf("fleet: reading a task: Redis answered %v; is another program writing under this fleet's prefix?", res)
	}
	version, _ := pair[0].(string)
	enc, _ := pair[1].(string)
	rec, err := decodeTask(enc)
	if err != nil {
		return nil, "", err
	}
	rec.ID, rec.Principal = id, principal
	return rec, version, nil
}

// Update implements mcp.TaskStore.
func (s *TaskStore) Update(ctx context.Context, principal, id string, fn func(t *mcp.TaskRecord) bool) (*mcp.TaskRecord, error) {
	for {
		rec, version, err := s.get(ctx, principal, id)
		if err != nil {
			return nil, err
		}
		next := clone(rec)
		if !fn(next) {
			return rec, nil
		}
		now := s.opts.Now()
		next.ID, next.Principal, next.CreatedAt, next.UpdatedAt = rec.ID, rec.Principal, rec.CreatedAt, now
		enc, err := encodeTask(next)
		if err != nil {
			return nil, err
		}
		res, err := s.call(ctx, commitTask, id, principal, micros(now), version, sizeOf(next), enc, s.opts.MaxBytes)
		if err != nil {
			return nil, s.r.wrap(ctx, "updating a task", err)
		}
		switch res {
		case "ok":
			return clone(next), nil
		case "gone":
			return nil, mcp.ErrTaskNotFound
		case "full":
			return nil, mcp.ErrTaskLimit
		}
		// "moved": another update came first; read it and run fn on it.
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fleet: updating a task: %w", err)
		}
	}
}

// Len returns how many tasks the store holds, expired ones not yet dropped included.
func (s *TaskStore) Len(ctx context.Context) (int, error) {
	n, err := s.r.client.ZCard(ctx, s.keys[0]).Result()
	return int(n), s.r.wrap(ctx, "counting tasks", err)
}

// wireTask is a record as Redis keeps it, apart from its id and principal (the key and a
// field). Raw JSON is kept as strings, byte for byte: encoding it as JSON would compact and
// escape it.
type wireTask struct {
	Status        mcp.TaskStatus     `json:"status"`
	StatusMessage string             `json:"msg,omitempty"`
	CreatedAt     time.Time          `json:"created"`
	UpdatedAt     time.Time          `json:"updated"`
	TTL           time.Duration      `json:"ttl"`
	PollInterval  time.Duration      `json:"poll"`
	Result        *string            `json:"result,omitempty"`
	Error         *jsonrpc.Error     `json:"error,omitempty"`
	InputRequests map[string]*string `json:"asked"`
	Answers       map[string]*string `json:"answers"`
}

func encodeTask(t *mcp.TaskRecord) (string, error) {
	w := wireTask{Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		TTL: t.TTL, PollInterval: t.PollInterval, Error: t.Error,
		InputRequests: rawMap(t.InputRequests), Answers: rawMap(t.Answers)}
	if t.Result != nil {
		r := string(t.Result)
		w.Result = &r
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return "", fmt.Errorf("fleet: encoding task %s: %v; its error's data must encode as JSON", t.ID, err)
	}
	return string(b), nil
}

func decodeTask(enc string) (*mcp.TaskRecord, error) {
	var w wireTask
	if err := json.Unmarshal([]byte(enc), &w); err != nil {
		return nil, fmt.Errorf("fleet: a task record in Redis does not decode (%v); is another program writing under this fleet's prefix?", err)
	}
	t := &mcp.TaskRecord{Status: w.Status, StatusMessage: w.StatusMessage, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
		TTL: w.TTL, PollInterval: w.PollInterval, Error: w.Error,
		InputRequests: jsonMap(w.InputRequests), Answers: jsonMap(w.Answers)}
	if w.Result != nil {
		t.Result = json.RawMessage(*w.Result)
	}
	return t, nil
}

// clone returns a copy of t that shares nothing mutable with it.
func clone(t *mcp.TaskRecord) *mcp.TaskRecord {
	c := *t
	c.InputRequests = maps.Clone(t.InputRequests)
	c.Answers = maps.Clone(t.Answers)
	if t.Error != nil {
		e := *t.Error
		c.Error = &e
	}
	return &c
}

func rawMap(m map[string]json.RawMessage) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		if v != nil {
			s := string(v)
			out[k] = &s
		} else {
			out[k] = nil
		}
	}
	return out
}

func jsonMap(m map[string]*string) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = json.RawMessage(*v)
		} else {
			out[k] = nil
		}
	}
	return out
}

// sizeOf is what a task costs the store beyond its fixed fields, counted as the memory
// store counts it, so that one MaxBytes means the same in both.
func sizeOf(t *mcp.TaskRecord) int {
	n := len(t.Result) + len(t.StatusMessage)
	if t.Error != nil {
		n += len(t.Error.Message) + 64 // its data, roughly
	}
	for k, v := range t.InputRequests {
		n += len(k) + len(v)
	}
	for k, v := range t.Answers {
		n += len(k) + len(v)
	}
	return n
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
