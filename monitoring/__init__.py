"""Job metrics time series, the seed's health rules, idle accelerators, Prometheus."""
