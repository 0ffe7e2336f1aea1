"""The inter-broker client: how a broker reaches the brokers of other zkbroker processes
(transaction markers, KIP-890 verification, AlterPartition, replica fetches)."""
