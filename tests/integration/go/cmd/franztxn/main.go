// Command franztxn is a read-process-write service on franz-go's GroupTransactSession:
// two members of one consumer group (each with its own transactional id) read -topic
// read_committed, write "OUT:"+value of each record to -out, and commit the group's
// offsets with the transaction; every fourth transaction of each member is aborted
// instead, so its input is read again. It stops once -per-codec outputs (the number of
// input records) are committed, and reports each transaction's outcome.
// test_transactions_clients.py checks that each input's output is there exactly once.
package main

import (
	"context"
	"flag"
	"fmt"
	"sluice/tests/integration/go/internal/jsonl"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	out := flag.String("out", "", "output topic")
	a, ctx, cancel := jsonl.Start(0)
	defer cancel()
	var committed atomic.Int64
	var wg sync.WaitGroup
	for m := 0; m < 2; m++ {
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			member(ctx, a, *out, m, &committed)
		}(m)
	}
	wg.Wait()
	jsonl.Emit("done", map[string]any{"committed_records": committed.Load()})
}

func member(ctx context.Context, a jsonl.Args, out string, m int, committed *atomic.Int64) {
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(a.Brokers...),
		kgo.TransactionalID(fmt.Sprintf("franz-gts-%d", m)),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(a.Group),
		kgo.ConsumeTopics(a.Topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(out),
	)
	if err != nil {
		jsonl.Fail("session", err)
	}
	defer s.Close()
	n := 0
	for int(committed.Load()) < a.PerCodec && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fetches := s.PollRecords(pctx, 20)
		pcancel()
		if fetches.IsClientClosed() {
			return
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			jsonl.Fail("begin", err)
		}
		for _, r := range recs {
			s.Produce(ctx, &kgo.Record{Key: r.Value, Value: append([]byte("OUT:"), r.Value...)},
				func(_ *kgo.Record, err error) {
					if err != nil {
						jsonl.Emit("produce-error", map[string]any{"member": m, "error": err.Error()})
					}
				})
		}
		n++
		try := kgo.TryCommit
		if n%4 == 0 {
			// Its records are written first, so the abort has something to undo.
			if err := s.Client().Flush(ctx); err != nil {
				jsonl.Fail("flush", err)
			}
			try = kgo.TryAbort
		}
		ok, err := s.End(ctx, try)
		if err != nil {
			jsonl.Fail("end", err)
		}
		if ok {
			committed.Add(int64(len(recs)))
		}
		first := recs[0]
		jsonl.Emit("txn", map[string]any{"member": m, "records": len(recs), "asked_commit": bool(try),
			"committed": ok, "first_partition": first.Partition, "first_offset": first.Offset})
	}
}
