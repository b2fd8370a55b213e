import json,re,sys
from pathlib import Path
qs=[l.rstrip('\n').split('\t') for l in open(Path(__file__).with_name('qs.tsv'))]
runs=sys.argv[1:]
def grade(ans, golds):
    return any(re.search(r'(?<![\w-])'+re.escape(g)+r'(?![\w-])', ans) for g in golds)
tot={r:[0,0] for r in runs}
for i,(doc,q,gold) in enumerate(qs,1):
    golds=gold.split('|'); row=[]
    for run in runs:
        d=json.load(open(f'{run}/{i}.json'))
        ans=d.get('answer','')
        line=d['short'] if d.get('answer_kind')=='extracted' else ans
        ev=' '.join(e['text'] for e in d.get('evidence',[]))
        r=grade(line,golds); e=grade(ev,golds); tot[run][0]+=r; tot[run][1]+=e
        row.append(f"{'R' if r else '-'}{'E' if e else '-'} {d.get('answer_kind')} {line[:60]!r}")
    print(i,doc,q[:40],'|',' || '.join(row))
print(tot)
