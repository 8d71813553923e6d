"""Elastic inference services: replicas on the cluster, gateway routing, QPS autoscaling within quota."""
