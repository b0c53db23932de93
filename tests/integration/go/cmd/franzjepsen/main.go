// Command franzjepsen is the franz-go side of test_transactions_crash.py's randomized
// check: -partitions writers (one transactional id each, transaction version 2 when the
// broker offers it) do short transactions of 1-4 records to random partitions of -topic,
// one in four aborted, for -per-codec seconds while the test kills the broker. Each
// transaction's outcome is printed as it ends: "committed" (EndTransaction(TryCommit)
// returned nil), "aborted" (ended before any commit was asked for) or "unknown" (the
// commit failed: either outcome may hold, but all or nothing).
package main

import (
	"context"
	"fmt"
	"math/rand"
	"sluice/tests/integration/go/internal/jsonl"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	a, ctx, cancel := jsonl.Start(40)
	defer cancel()
	until := time.Now().Add(time.Duration(a.PerCodec) * time.Second)
	var wg sync.WaitGroup
	for k := 0; k < a.Partitions; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			writer(ctx, a, k, until)
		}(k)
	}
	wg.Wait()
	jsonl.Emit("done", map[string]any{})
}

func client(a jsonl.Args, k int) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.Brokers...), kgo.DefaultProduceTopic(a.Topic),
		kgo.TransactionalID(fmt.Sprintf("jepsen-go-%d", k)), kgo.TransactionTimeout(10*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(6*time.Second))
	if err != nil {
		jsonl.Fail("client", err)
	}
	return cl
}

func writer(ctx context.Context, a jsonl.Args, k int, until time.Time) {
	rng := rand.New(rand.NewSource(int64(k)))
	cl := client(a, k)
	defer func() { cl.Close() }()
	const parts = 3
	for n := 1; time.Now().Before(until) && ctx.Err() == nil; n++ {
		values := make([]string, 1+rng.Intn(4))
		for i := range values {
			values[i] = fmt.Sprintf("g%d-%d-%d", k, n, i)
		}
		abort := rng.Intn(4) == 0
		outcome, errText := "aborted", ""
		if err := cl.BeginTransaction(); err != nil {
			errText = err.Error()
		} else {
			var perr error
			for _, v := range values {
				r := &kgo.Record{Value: []byte(v), Partition: int32(rng.Intn(parts))}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil && perr == nil {
					perr = err
				}
			}
			switch {
			case perr != nil:
				errText = perr.Error()
			case abort:
				if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
					errText = err.Error()
				}
			default:
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					outcome, errText = "unknown", err.Error()
				} else {
					outcome = "committed"
				}
			}
		}
		if errText != "" {
			// A new instance replaces the client (its InitProducerId fences the old one
			// and aborts what it left open): after a fatal error franz-go's own abort
			// does not bring the client back.
			cl.Close()
			cl = client(a, k)
		}
		jsonl.Emit("txn", map[string]any{"writer": k, "n": n, "outcome": outcome, "values": values,
			"error": errText})
		time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond)
	}
}
