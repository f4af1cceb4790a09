/* Synthetic programs, passes 2 and 3: message matching and collective instances (see synth.c). */
#include "synth_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pass 2: message matching ----------------------------------------------- */

typedef struct mtable {
    mentry *e;
    size_t cap, count;
} mtable;

static inline size_t mhash(uint32_t comm, uint32_t src, uint32_t dst, uint32_t tag)
{
    return (size_t)(ws_hash64(((uint64_t)comm << 32) ^ src) ^ ws_hash64(((uint64_t)dst << 32) | tag));
}

static mentry *mfind(mtable *m, uint32_t comm, uint32_t src, uint32_t dst, uint32_t tag)
{
    size_t mask = m->cap - 1, j = mhash(comm, src, dst, tag) & mask;
    for (;; j = (j + 1) & mask) {
        mentry *e = &m->e[j];
        if (e->comm == WS_NONE32) {
            e->comm = comm;
            e->src = src;
            e->dst = dst;
            e->tag = tag;
            e->head = e->tail = WS_NONE64;
            e->queued = 0;
            e->n_send = e->n_recv = 0;
            m->count++;
            return e;
        }
        if (e->comm == comm && e->src == src && e->dst == dst && e->tag == tag)
            return e;
    }
}

static int mgrow(mtable *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    mentry *old = m->e;
    size_t old_cap = m->cap;
    m->e = ws_malloc_array(cap, sizeof *m->e);
    if (!m->e) {
        m->e = old;
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        m->e[i].comm = WS_NONE32;
    m->cap = cap;
    m->count = 0;
    size_t mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].comm == WS_NONE32)
            continue;
        size_t j = mhash(old[i].comm, old[i].src, old[i].dst, old[i].tag) & mask;
        while (m->e[j].comm != WS_NONE32)
            j = (j + 1) & mask;
        m->e[j] = old[i];
        m->count++;
    }
    free(old);
    return 0;
}

int synth_match_messages(synth *s)
{
    mtable m = {NULL, 0, 0};
    if (mgrow(&m) != 0)
        return ws_error_nomem(s->err, "message matching");
    for (uint32_t r = 0; r < s->n; r++) {
        for (uint64_t gi = (uint64_t)s->p->rank_ptr[r]; gi < (uint64_t)s->p->rank_ptr[r + 1]; gi++) {
            const int64_t *op = op_row(s, gi);
            int kind = (int)op[0];
            if (!is_p2p(kind))
                continue;
            if ((m.count + 1) * 2 > m.cap && mgrow(&m) != 0) {
                free(m.e);
                return ws_error_nomem(s->err, "message matching");
            }
            uint32_t c = (uint32_t)op[4];
            uint32_t peer = s->comm[c].members[op[1]];
            int send = is_send(kind);
            mentry *e = send ? mfind(&m, c, r, peer, (uint32_t)op[2]) : mfind(&m, c, peer, r, (uint32_t)op[2]);
            if (send)
                e->n_send++;
            else
                e->n_recv++;
            if ((send && e->queued < 0) || (!send && e->queued > 0)) {
                /* the oldest waiting partner */
                uint64_t partner = e->head;
                e->head = s->link[partner];
                s->link[partner] = gi;
                s->link[gi] = partner;
                e->queued += send ? 1 : -1;
                if (e->queued == 0)
                    e->head = e->tail = WS_NONE64;
            } else {
                s->link[gi] = WS_NONE64;
                if (e->queued == 0)
                    e->head = gi;
                else
                    s->link[e->tail] = gi;
                e->tail = gi;
                e->queued += send ? 1 : -1;
            }
        }
    }
    /* report the earliest unmatched operation */
    mentry *worst = NULL;
    for (size_t j = 0; j < m.cap; j++)
        if (m.e[j].comm != WS_NONE32 && m.e[j].queued != 0 && (!worst || m.e[j].head < worst->head))
            worst = &m.e[j];
    int rc = WS_OK;
    if (worst) {
        char what[300];
        synth_describe_op(s, worst->head, what, sizeof what);
        const char *cname = s->comm[worst->comm].name;
        if (worst->queued < 0)
            rc = MATCH_FAIL("%s: no matching send: world rank %u sends %llu message(s) with tag %u on %s to world "
                            "rank %u, which receives %llu",
                            what, (unsigned)worst->src, (unsigned long long)worst->n_send, (unsigned)worst->tag,
                            cname, (unsigned)worst->dst, (unsigned long long)worst->n_recv);
        else
            rc = MATCH_FAIL("%s: no matching receive: world rank %u receives %llu message(s) with tag %u on %s from "
                            "world rank %u, which sends %llu",
                            what, (unsigned)worst->dst, (unsigned long long)worst->n_recv, (unsigned)worst->tag,
                            cname, (unsigned)worst->src, (unsigned long long)worst->n_send);
    }
    free(m.e);
    return rc;
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

