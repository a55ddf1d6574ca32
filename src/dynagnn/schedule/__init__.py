"""Scheduling from predicted costs: BLAD's two-level load scheduler (snapshot groups to workers,
``groups``; each group split between two co-located processes by an exact dynamic programme,
``balance``), BLAD's operator-order manager (``topology``), PiPAD's per-frame tuner (``tuner``), and
the versioned JSON plan that the schedule stage writes (``plan``). Pure numpy; no torch."""

from .balance import BalancePlan, balance, dp_splits, eq2_splits, even_splits, makespan, simulate
from .groups import (GroupPlan, balanced_plan, even_plan, group_costs, group_ids, group_loads, imbalance,
                     plan_groups, sync_fraction, sync_ratio)
from .plan import PLAN_VERSION, SchedulePlan, build_plan
from .topology import BatchOrders, OperatorOrder, plan_operators, plan_operators_batch
from .tuner import OPTIONS, SpeedupTable, TunerPlan, traffic_speedup, tune_frames

__all__ = [
    "BalancePlan", "balance", "dp_splits", "eq2_splits", "even_splits", "makespan", "simulate",
    "GroupPlan", "balanced_plan", "even_plan", "group_costs", "group_ids", "group_loads", "imbalance",
    "plan_groups", "sync_fraction", "sync_ratio", "PLAN_VERSION", "SchedulePlan", "build_plan", "BatchOrders",
    "OperatorOrder", "plan_operators", "plan_operators_batch", "OPTIONS", "SpeedupTable", "TunerPlan",
    "traffic_speedup", "tune_frames",
]
