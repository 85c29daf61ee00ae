/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: tc redirects, the tcfilter model: every frame arriving on one link leaves by
 * another. `tc qdisc add dev FROM ingress` and `tc filter add dev FROM parent ffff:
 * protocol all u32 match u32 0 0 action mirred egress redirect dev TO`, in rtnetlink.
 * u32 with an all-zero mask rather than matchall: every distribution kernel has cls_u32,
 * not all build cls_matchall. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <string.h>
#include <sys/socket.h>

#include "net-internal.h"
#include "utils.h"

#define INGRESS_HANDLE TC_H_MAKE(TC_H_INGRESS, 0) /* ffff: */
#define FILTER_PRIO 1

static int ingress_qdisc(struct moat_nl *nl, int index, bool add, moat_error *err)
{
	struct tcmsg t = { .tcm_family = AF_UNSPEC,
			   .tcm_ifindex = index,
			   .tcm_handle = INGRESS_HANDLE,
			   .tcm_parent = TC_H_INGRESS };
	struct moat_nl_req r;

	if (add) {
		moat_nl_req_init(&r, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, &t, sizeof(t));
		moat_nl_put_str(&r, TCA_KIND, "ingress");
	} else {
		moat_nl_req_init(&r, RTM_DELQDISC, 0, &t, sizeof(t));
	}
	return moat_nl_request(nl, &r, NULL, NULL, err);
}

/* The u32 selector: one key of mask 0 (every frame matches), terminal so that a match runs
 * the actions (a u32 node that is not terminal only follows its link to another table). */
static void put_match_all(struct moat_nl_req *r)
{
	struct {
		struct tc_u32_sel sel;
		struct tc_u32_key key;
	} s;

	memset(&s, 0, sizeof(s));
	s.sel.flags = TC_U32_TERMINAL;
	s.sel.nkeys = 1;
	moat_nl_put(r, TCA_U32_SEL, &s, sizeof(s));
}

/* The action list with one action, mirred: redirect to to's egress. The frame is then
 * gone from from's path (TC_ACT_STOLEN). */
static void put_redirect_action(struct moat_nl_req *r, int to_index)
{
	struct tc_mirred m = { .action = TC_ACT_STOLEN,
			       .eaction = TCA_EGRESS_REDIR,
			       .ifindex = (uint32_t)to_index };
	size_t acts, act, opts;

	acts = moat_nl_nest_start(r, TCA_U32_ACT);
	act = moat_nl_nest_start(r, 1); /* the first action of the list */
	moat_nl_put_str(r, TCA_ACT_KIND, "mirred");
	opts = moat_nl_nest_start(r, TCA_ACT_OPTIONS);
	moat_nl_put(r, TCA_MIRRED_PARMS, &m, sizeof(m));
	moat_nl_nest_end(r, opts);
	moat_nl_nest_end(r, act);
	moat_nl_nest_end(r, acts);
}

static int redirect_filter(struct moat_nl *nl, int from_index, int to_index, moat_error *err)
{
	struct tcmsg t = { .tcm_family = AF_UNSPEC,
			   .tcm_ifindex = from_index,
			   .tcm_parent = INGRESS_HANDLE,
			   /* priority and protocol: every ethertype */
			   .tcm_info = TC_H_MAKE(FILTER_PRIO << 16, htons(ETH_P_ALL)) };
	struct moat_nl_req r;
	size_t opts;

	moat_nl_req_init(&r, RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL, &t, sizeof(t));
	moat_nl_put_str(&r, TCA_KIND, "u32");
	opts = moat_nl_nest_start(&r, TCA_OPTIONS);
	put_match_all(&r);
	put_redirect_action(&r, to_index);
	moat_nl_nest_end(&r, opts);
	return moat_nl_request(nl, &r, NULL, NULL, err);
}

int moat_net_redirect(int from_index, int to_index, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	_cleanup_error_ moat_error undo = MOAT_ERROR_INIT;
	int e;

	if (to_index <= 0)
		return moat_error_msg(err, EINVAL, "link %d: redirect to link %d: not a link index",
				      from_index, to_index);
	if ((e = net_open(&nl, from_index, err)) < 0)
		return e;
	e = ingress_qdisc(&nl, from_index, true, err);
	if (e < 0)
		return net_fail(&nl, from_index, err, "add ingress qdisc");
	e = redirect_filter(&nl, from_index, to_index, err);
	if (e < 0) {
		(void)ingress_qdisc(&nl, from_index, false, &undo);
		return net_fail(&nl, from_index, err, "add filter redirecting to link %d",
				to_index);
	}
	return 0;
}

int moat_net_redirect_remove(int from_index, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	int e;

	if ((e = net_open(&nl, from_index, err)) < 0)
		return e;
	e = ingress_qdisc(&nl, from_index, false, err);
	/* Kernels say "no such qdisc" with ENOENT or EINVAL. */
	if (e == -ENOENT || e == -EINVAL) {
		moat_error_drop(err);
		return 0;
	}
	if (e < 0)
		return net_fail(&nl, from_index, err, "delete ingress qdisc");
	return 0;
}
