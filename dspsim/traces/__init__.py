"""Reading, summarising, comparing and plotting the traces a run writes."""
