/* doca-emu: DOCA Core's graphs (the whole doca_graph.h, the same 19 functions in 2.5 and
 * 2.6; in DOCA's libdoca_common, so no pkg-config module of its own). A graph of context
 * nodes (a task of a context), user nodes (a callback with a cookie) and sub-graph nodes (an
 * instance of another started graph), run as instances on the progress engine it was
 * created with.
 *
 * A node runs when all its parents completed; ready nodes run in the order they became ready
 * (roots in creation order, then a completed node's children in the order their dependencies
 * were added), from doca_pe_progress, never inside doca_graph_instance_submit; nodes on
 * different contexts are in flight together. A task run by a graph does not reach its
 * context's completion or error callback. The first node that fails (its task's error, its
 * context no longer running, a user callback's error, a sub-graph instance's failure) fails
 * the instance: no further node runs, and once the nodes in flight completed the graph's error
 * callback runs, once. A context refusing a task with DOCA_ERROR_AGAIN does not fail it: the
 * node is tried again at the next progress. The graph completion callback finds its instance
 * idle: it may resubmit it. A sub-graph instance reports to its parent's node, not to its own
 * graph's callbacks. The engine cannot be destroyed before the graph (DOCA_ERROR_IN_USE). */
#ifndef DOCA_EMU_GRAPH_H_
#define DOCA_EMU_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_ctx;
struct doca_pe;
struct doca_task;

struct doca_graph;
struct doca_graph_node;
struct doca_graph_instance;

typedef void (*doca_graph_completion_cb_t)(struct doca_graph_instance *instance,
					   union doca_data instance_user_data,
					   union doca_data graph_user_data);

/* Returns DOCA_SUCCESS, or any code: that code fails the instance. */
typedef doca_error_t (*doca_graph_user_node_cb_t)(void *cookie);

DOCA_EXPERIMENTAL doca_error_t doca_graph_create(struct doca_pe *pe, struct doca_graph **graph);
/* Stopped only (DOCA_ERROR_BAD_STATE); its nodes go with it. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_destroy(struct doca_graph *graph);
/* Stopped only; num_instances 1..65536; both callbacks required. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_set_conf(struct doca_graph *graph,
						   doca_graph_completion_cb_t graph_completion_cb,
						   doca_graph_completion_cb_t graph_error_cb,
						   uint32_t num_instances);
/* Stopped only (DOCA_ERROR_BAD_STATE). */
DOCA_EXPERIMENTAL doca_error_t doca_graph_set_user_data(struct doca_graph *graph, union doca_data user_data);
DOCA_EXPERIMENTAL doca_error_t doca_graph_get_user_data(const struct doca_graph *graph, union doca_data *user_data);
/* Nodes: stopped only (DOCA_ERROR_BAD_STATE); each is a root until a dependency is added. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_node_create_from_ctx(struct doca_graph *graph,
							       const struct doca_ctx *ctx,
							       struct doca_graph_node **node);
DOCA_EXPERIMENTAL doca_error_t doca_graph_node_create_from_user(struct doca_graph *graph,
								doca_graph_user_node_cb_t cb,
								struct doca_graph_node **node);
/* DOCA_ERROR_NOT_PERMITTED for a circle (the graph itself, or a sub-graph holding it);
 * DOCA_ERROR_BAD_STATE when sub_graph is not started. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_node_create_from_graph(struct doca_graph *graph,
								 struct doca_graph *sub_graph,
								 struct doca_graph_node **node);
/* to runs after from. DOCA_ERROR_NOT_PERMITTED for a circle; DOCA_ERROR_INVALID_VALUE for a
 * node of another graph; adding a dependency twice changes nothing. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_add_dependency(struct doca_graph *graph,
							 struct doca_graph_node *from,
							 struct doca_graph_node *to);
/* DOCA_ERROR_BAD_STATE: started already, no context node, a node's context not running, a
 * sub-graph not started, or no doca_graph_set_conf before. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_start(struct doca_graph *graph);
/* DOCA_ERROR_IN_USE while instances exist; DOCA_SUCCESS when stopped already. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_stop(struct doca_graph *graph);
/* Started only (DOCA_ERROR_BAD_STATE); DOCA_ERROR_NO_MEMORY beyond num_instances. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_create(const struct doca_graph *graph,
							  struct doca_graph_instance **graph_instance);
/* DOCA_ERROR_IN_USE while submitted or set as a sub-graph node's data. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_destroy(struct doca_graph_instance *graph_instance);
/* DOCA_ERROR_IN_USE while submitted. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_set_user_data(struct doca_graph_instance *graph_instance,
								 union doca_data user_data);
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_get_user_data(const struct doca_graph_instance *graph_instance,
								 union doca_data *user_data);
/* Node data (there is no getter): DOCA_ERROR_BAD_STATE while submitted; DOCA_ERROR_NOT_PERMITTED
 * for a node of another graph or kind, a task of another context, a sub-graph instance of
 * another graph or submitted. The task stays the application's: free it after destroying the
 * instance (a task freed before makes the next submission fail with DOCA_ERROR_BAD_STATE). */
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_set_ctx_node_data(struct doca_graph_instance *graph_instance,
								     struct doca_graph_node *node,
								     struct doca_task *task);
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_set_user_node_data(struct doca_graph_instance *graph_instance,
								      struct doca_graph_node *node,
								      void *cookie);
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_set_sub_graph_node_data(struct doca_graph_instance *graph_instance,
									   struct doca_graph_node *node,
									   struct doca_graph_instance *sub_graph_instance);
/* DOCA_ERROR_IN_USE when submitted already (or a sub-graph node's data); DOCA_ERROR_INVALID_VALUE
 * when a node has no data; DOCA_ERROR_BAD_STATE when a node's context is not running or its
 * task was freed. The roots run from the next doca_pe_progress. */
DOCA_EXPERIMENTAL doca_error_t doca_graph_instance_submit(struct doca_graph_instance *graph_instance);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_GRAPH_H_ */
