/* Synthetic programs, passes 2 and 3: message matching and collective instances (see synth.c). */
#include "synth_int.h"
#include "../common/match.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pass 2: message matching ----------------------------------------------- */

/* Message ends of the program (common/match.h): channel (comm, source
 * world rank, destination world rank, tag), order the global operation
 * index, which is program order within a rank. */
typedef struct pass2 {
    synth *s;
    uint64_t first_unmatched; /* earliest operation without a partner */
    int unmatched_is_send;
} pass2;

static void on_pair(void *context, const ws_match_key *send, const ws_match_key *recv)
{
    synth *s = ((pass2 *)context)->s;
    s->link[send->order] = recv->order;
    s->link[recv->order] = send->order;
}

static int on_unmatched(void *context, const ws_match_key *key, int is_send)
{
    pass2 *m = context;
    m->s->link[key->order] = WS_NONE64;
    if (key->order < m->first_unmatched) {
        m->first_unmatched = key->order;
        m->unmatched_is_send = is_send;
    }
    return 0;
}

int synth_match_messages(synth *s)
{
    uint64_t n_p2p = 0;
    for (uint64_t gi = 0; gi < s->n_ops; gi++)
        n_p2p += is_p2p((int)op_row(s, gi)[0]);
    ws_match_key *keys = ws_malloc_array(n_p2p ? n_p2p : 1, sizeof *keys);
    if (!keys)
        return ws_error_nomem(s->err, "message matching");
    /* sends from the front, receives from the back */
    uint64_t n_sends = 0, n_recvs = 0;
    for (uint32_t r = 0; r < s->n; r++) {
        for (uint64_t gi = (uint64_t)s->p->rank_ptr[r]; gi < (uint64_t)s->p->rank_ptr[r + 1]; gi++) {
            const int64_t *op = op_row(s, gi);
            int kind = (int)op[0];
            if (!is_p2p(kind))
                continue;
            uint32_t c = (uint32_t)op[4];
            uint32_t peer = s->comm[c].members[op[1]];
            int send = is_send(kind);
            ws_match_key *k = send ? &keys[n_sends++] : &keys[n_p2p - ++n_recvs];
            k->channel[0] = c;
            k->channel[1] = send ? r : peer;
            k->channel[2] = send ? peer : r;
            k->channel[3] = (uint32_t)op[2];
            k->order = gi;
        }
    }
    pass2 m = {s, WS_NONE64, 0};
    ws_match_fifo(keys, n_sends, keys + n_sends, n_recvs, on_pair, on_unmatched, &m);
    free(keys);
    if (m.first_unmatched == WS_NONE64)
        return WS_OK;
    /* report the earliest unmatched operation with its channel's counts */
    const int64_t *op = op_row(s, m.first_unmatched);
    uint32_t r = rank_of_op(s, m.first_unmatched);
    uint32_t c = (uint32_t)op[4], peer = s->comm[c].members[op[1]], tag = (uint32_t)op[2];
    uint32_t src = m.unmatched_is_send ? r : peer, dst = m.unmatched_is_send ? peer : r;
    uint64_t n_send = 0, n_recv = 0;
    for (uint32_t q = 0; q < s->n; q++) {
        if (q != src && q != dst)
            continue;
        for (uint64_t gi = (uint64_t)s->p->rank_ptr[q]; gi < (uint64_t)s->p->rank_ptr[q + 1]; gi++) {
            const int64_t *o = op_row(s, gi);
            if (!is_p2p((int)o[0]) || (uint32_t)o[4] != c || (uint32_t)o[2] != tag)
                continue;
            uint32_t other = s->comm[c].members[o[1]];
            if (is_send((int)o[0]) && q == src && other == dst)
                n_send++;
            else if (!is_send((int)o[0]) && q == dst && other == src)
                n_recv++;
        }
    }
    char what[300];
    synth_describe_op(s, m.first_unmatched, what, sizeof what);
    const char *cname = s->comm[c].name;
    if (!m.unmatched_is_send)
        return MATCH_FAIL("%s: no matching send: world rank %u sends %llu message(s) with tag %u on %s to world "
                          "rank %u, which receives %llu",
                          what, (unsigned)src, (unsigned long long)n_send, (unsigned)tag, cname, (unsigned)dst,
                          (unsigned long long)n_recv);
    return MATCH_FAIL("%s: no matching receive: world rank %u receives %llu message(s) with tag %u on %s from "
                      "world rank %u, which sends %llu",
                      what, (unsigned)dst, (unsigned long long)n_recv, (unsigned)tag, cname, (unsigned)src,
                      (unsigned long long)n_send);
}

/* ---- pass 3: collective instances -------------------------------------------- */

/* Operation (pc) of rank r that is its `seq`-th collective call on comm c. */
static uint64_t find_collective_call(const synth *s, uint32_t r, uint32_t c, uint64_t seq)
{
    uint64_t k = (c == 0) ? 1 : 0; /* MPI_Init is call 0 on the world */
    if (c == 0 && seq == 0)
        return 0;
    uint64_t n_user = n_user_ops(s, r);
    for (uint64_t pc = 1; pc <= n_user; pc++) {
        const int64_t *op = op_row(s, (uint64_t)s->p->rank_ptr[r] + pc - 1);
        if (is_collective((int)op[0]) && (uint32_t)op[4] == c) {
            if (k == seq)
                return pc;
            k++;
        }
    }
    return n_user + 1;
}

static void describe_call(const synth *s, int kind, uint32_t root, char *buf, size_t size)
{
    int f = function_of(kind);
    if (has_root(kind))
        snprintf(buf, size, "%s with root %u", synth_mpi_functions[f].name, (unsigned)root);
    else
        snprintf(buf, size, "%s", f >= 0 ? synth_mpi_functions[f].name : "?");
    (void)s;
}

int synth_build_collectives(synth *s)
{
    /* every member must make the same number of calls per communicator */
    uint64_t n_inst = 0, n_slots = 0;
    for (uint32_t c = 0; c < s->n_xcomm; c++) {
        xcomm *x = &s->comm[c];
        const uint64_t *cnt = s->counts + x->count_base;
        uint32_t lo = 0, hi = 0;
        for (uint32_t k = 1; k < x->size; k++) {
            if (cnt[k] < cnt[lo])
                lo = k;
            if (cnt[k] > cnt[hi])
                hi = k;
        }
        if (cnt[lo] != cnt[hi]) {
            char what[300];
            uint32_t r = x->members[hi];
            /* calls of the world count MPI_Init (first) and MPI_Finalize
             * (last): the first unmatched user call is then at cnt - 1 */
            uint64_t user_lo = cnt[lo] - (c == 0 ? 2 : 0);
            synth_describe(s, r, find_collective_call(s, r, c, c == 0 ? cnt[lo] - 1 : cnt[lo]), what, sizeof what);
            return MATCH_FAIL("%s: collective call #%llu on %s has no counterpart on rank %u, which makes only %llu "
                              "collective call(s) on this communicator",
                              what, (unsigned long long)user_lo, x->name, (unsigned)x->members[lo],
                              (unsigned long long)user_lo);
        }
        x->inst_base = n_inst;
        x->n_inst = cnt[0];
        n_inst += cnt[0];
        if (cnt[0] && x->size > (UINT64_MAX - n_slots) / cnt[0])
            return ARG_FAIL("too many collective calls");
        n_slots += cnt[0] * x->size;
    }
    s->n_inst = n_inst;
    s->inst = ws_calloc(n_inst ? n_inst : 1, sizeof *s->inst);
    s->slot_time = ws_malloc_array(n_slots ? n_slots : 1, sizeof *s->slot_time);
    if (!s->inst || !s->slot_time)
        return ws_error_nomem(s->err, "collective instances");
    for (uint64_t i = 0; i < n_slots; i++)
        s->slot_time[i] = -1;
    uint64_t slot = 0;
    for (uint32_t c = 0; c < s->n_xcomm; c++) {
        xcomm *x = &s->comm[c];
        for (uint64_t k = 0; k < x->n_inst; k++) {
            instance *in = &s->inst[x->inst_base + k];
            in->slot = slot;
            slot += x->size;
            in->comm = c;
            in->max_enter = -1;
            in->prefix_max = -1;
            in->root = WS_NONE32;
        }
    }
    /* world: the first instance is MPI_Init, the last MPI_Finalize */
    s->inst[s->comm[0].inst_base].kind = K_INIT;
    s->inst[s->comm[0].inst_base + s->comm[0].n_inst - 1].kind = K_FINALIZE;

    memset(s->counts, 0, s->n_counts * sizeof *s->counts);
    for (uint32_t r = 0; r < s->n; r++)
        s->counts[s->comm[0].count_base + r] = 1;
    for (uint32_t r = 0; r < s->n; r++) {
        for (uint64_t gi = (uint64_t)s->p->rank_ptr[r]; gi < (uint64_t)s->p->rank_ptr[r + 1]; gi++) {
            const int64_t *op = op_row(s, gi);
            int kind = (int)op[0];
            if (!is_collective(kind))
                continue;
            uint32_t c = (uint32_t)op[4];
            uint32_t cr = comm_rank(s, c, r);
            uint64_t seq = s->counts[s->comm[c].count_base + cr]++;
            uint64_t i = s->comm[c].inst_base + seq;
            instance *in = &s->inst[i];
            uint32_t root = has_root(kind) ? (uint32_t)op[1] : WS_NONE32;
            uint64_t pc = gi - (uint64_t)s->p->rank_ptr[r] + 1;
            if (in->kind == 0) {
                in->kind = kind;
                in->root = root;
                in->first_rank = r;
                in->first_pc = pc;
            } else if (in->kind != kind || in->root != root) {
                char what[300], other[300], mine[64], theirs[64];
                synth_describe(s, r, pc, what, sizeof what);
                describe_call(s, kind, root, mine, sizeof mine);
                if (in->kind == K_FINALIZE) {
                    return MATCH_FAIL("%s: collective call #%llu on %s is %s, but the other members call "
                                      "MPI_Finalize there",
                                      what, (unsigned long long)(seq - (c == 0 ? 1 : 0)), s->comm[c].name, mine);
                }
                synth_describe(s, in->first_rank, in->first_pc, other, sizeof other);
                describe_call(s, in->kind, in->root, theirs, sizeof theirs);
                return MATCH_FAIL("%s: collective call #%llu on %s is %s, but %s calls %s there "
                                  "(collectives must be called in the same order by all members)",
                                  what, (unsigned long long)(seq - (c == 0 ? 1 : 0)), s->comm[c].name, mine, other,
                                  theirs);
            }
            s->link[gi] = i;
        }
    }
    return WS_OK;
}

